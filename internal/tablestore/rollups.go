package tablestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
)

// A tenant-month's rollups (ledger.Rollup) live in the month's own
// partition, after its ledger rows:
//
//	RowKey "~u|<YYYY-MM-DD>|<path>|<alias>|<deployment>"
//	       Day, Path, Alias, Deployment, the Usage columns, the same
//	       prefixed Abandoned, and Rows (how many ledger rows they sum)
//
// Ledger rows' keys start with their path ("batch-", "queue-"), so "~"
// bounds them. Because a rollup shares its rows' partition, every write
// of ledger rows is one entity-group transaction with the rollups it
// moves, each row conditional on the version it was computed from (the
// ETag read, or absence): a write lands with its rollups or not at all,
// and a concurrent writer, a retry after a lost reply or a redelivery
// finds the rows as they now are and moves the rollups by the difference
// only. Rebuild recomputes them from the rows (for rows written by a
// version that kept no rollups).
const (
	rollupPrefix = "~u|"
	rollupEnd    = "~u}" // '}' follows '|'
	ledgerRowEnd = "~"
)

// maxWriteAttempts bounds the re-reads of a write whose rows another
// writer changed between the read and the transaction.
const maxWriteAttempts = 64

// readParallel bounds the point reads of one write in flight.
const readParallel = 16

func rollupRowKey(k ledger.RollupKey) string {
	return rollupPrefix + k.Day + "|" + string(k.Path) + "|" + k.Alias + "|" + k.Deployment
}

// rollupEntity is a rollup row; counters are Edm.Int64.
type rollupEntity struct {
	PartitionKey string
	RowKey       string
	Day          string
	Path         string
	Alias        string
	Deployment   string
	usageColumns
	AbandonedPromptTokens         int64  `json:",string"`
	AbandonedPromptTokensType     string `json:"AbandonedPromptTokens@odata.type"`
	AbandonedCompletionTokens     int64  `json:",string"`
	AbandonedCompletionTokensType string `json:"AbandonedCompletionTokens@odata.type"`
	AbandonedCachedTokens         int64  `json:",string"`
	AbandonedCachedTokensType     string `json:"AbandonedCachedTokens@odata.type"`
	AbandonedReasoningTokens      int64  `json:",string"`
	AbandonedReasoningTokensType  string `json:"AbandonedReasoningTokens@odata.type"`
	AbandonedRequests             int64  `json:",string"`
	AbandonedRequestsType         string `json:"AbandonedRequests@odata.type"`
	AbandonedRefusals             int64  `json:",string"`
	AbandonedRefusalsType         string `json:"AbandonedRefusals@odata.type"`
	AbandonedCostNanoUSD          int64  `json:",string"`
	AbandonedCostNanoUSDType      string `json:"AbandonedCostNanoUSD@odata.type"`
	Rows                          int64  `json:",string"`
	RowsType                      string `json:"Rows@odata.type"`
}

func toRollupEntity(pk string, r ledger.Rollup) rollupEntity {
	a := r.Abandoned
	return rollupEntity{
		PartitionKey: pk, RowKey: rollupRowKey(r.RollupKey),
		Day: r.Day, Path: string(r.Path), Alias: r.Alias, Deployment: r.Deployment,
		usageColumns:          toUsageColumns(r.Usage),
		AbandonedPromptTokens: a.PromptTokens, AbandonedPromptTokensType: edmInt64,
		AbandonedCompletionTokens: a.CompletionTokens, AbandonedCompletionTokensType: edmInt64,
		AbandonedCachedTokens: a.CachedTokens, AbandonedCachedTokensType: edmInt64,
		AbandonedReasoningTokens: a.ReasoningTokens, AbandonedReasoningTokensType: edmInt64,
		AbandonedRequests: a.Requests, AbandonedRequestsType: edmInt64,
		AbandonedRefusals: a.Refusals, AbandonedRefusalsType: edmInt64,
		AbandonedCostNanoUSD: int64(a.Cost), AbandonedCostNanoUSDType: edmInt64,
		Rows: r.Rows, RowsType: edmInt64,
	}
}

func (e *rollupEntity) rollup() ledger.Rollup {
	return ledger.Rollup{
		RollupKey: ledger.RollupKey{Day: e.Day, Path: ledger.Path(e.Path), Alias: e.Alias, Deployment: e.Deployment},
		Usage:     e.usage(),
		Abandoned: ledger.Usage{
			PromptTokens: e.AbandonedPromptTokens, CompletionTokens: e.AbandonedCompletionTokens, CachedTokens: e.AbandonedCachedTokens,
			ReasoningTokens: e.AbandonedReasoningTokens, Requests: e.AbandonedRequests, Refusals: e.AbandonedRefusals,
			Cost: catalog.Money(e.AbandonedCostNanoUSD),
		},
		Rows: e.Rows,
	}
}

// stored is a row as read, with the version a conditional write names;
// found is false when there was none.
type stored[T any] struct {
	row   T
	etag  azcore.ETag
	found bool
}

// point reads one entity of partition pk, decoding it into T.
func point[T any](ctx context.Context, t *table, pk, rk string) (stored[T], error) {
	var out stored[T]
	res, err := t.client.GetEntity(ctx, pk, rk, nil)
	if isNotFound(err) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("read %s %s: %w", pk, rk, err)
	}
	if err := json.Unmarshal(res.Value, &out.row); err != nil {
		return out, fmt.Errorf("decode %s %s: %w", pk, rk, err)
	}
	out.etag, out.found = res.ETag, true
	return out, nil
}

// points reads the entities keys of partition pk, readParallel at a time.
func points[T any](ctx context.Context, t *table, pk string, keys []string) ([]stored[T], error) {
	out := make([]stored[T], len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, readParallel)
	var wg sync.WaitGroup
	for i, rk := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i], errs[i] = point[T](ctx, t, pk, rk)
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// change is one row's write: next says what the row becomes given what it
// holds (nil: none), nil to leave it as it is.
type change struct {
	key  string
	next func(prev *ledger.Entry) *ledger.Entry
}

// planned is a change read and decided.
type planned struct {
	c    change
	prev stored[ledgerEntity]
	old  *ledger.Entry // prev as an entry; nil when there was none
	new  *ledger.Entry
}

// commit writes changes to the rows of one partition (a tenant-month),
// each with the rollups it moves, in as few transactions as fit: a change
// whose rows another writer moved first is read again and recomputed.
func (l *Ledger) commit(ctx context.Context, tenantID string, m ledger.Month, changes []change) error {
	pk := Partition(tenantID, m)
	for attempt := 1; len(changes) > 0; attempt++ {
		if attempt > maxWriteAttempts {
			return fmt.Errorf("write %d ledger rows in %s: still contended after %d attempts", len(changes), pk, maxWriteAttempts)
		}
		if attempt > 1 {
			// Writers that collided spread out before they read again.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(rand.IntN(attempt*4)+1) * time.Millisecond):
			}
		}
		keys := make([]string, len(changes))
		for i, c := range changes {
			keys[i] = c.key
		}
		prevs, err := points[ledgerEntity](ctx, &l.t, pk, keys)
		if err != nil {
			return fmt.Errorf("read ledger rows in %s: %w", pk, err)
		}
		var plan []planned
		for i, c := range changes {
			p := planned{c: c, prev: prevs[i]}
			if p.prev.found {
				e := p.prev.row.entry(tenantID, m)
				p.old = &e
			}
			if p.new = c.next(p.old); p.new != nil {
				plan = append(plan, p)
			}
		}
		var again []change
		for _, chunk := range chunkPlan(plan) {
			lost, err := l.commitChunk(ctx, pk, chunk)
			if err != nil {
				return err
			}
			if lost {
				for _, p := range chunk {
					again = append(again, p.c)
				}
			}
		}
		changes = again
	}
	return nil
}

// chunkPlan splits plan into transactions of at most MaxTransaction rows,
// ledger rows and the rollups they move together.
func chunkPlan(plan []planned) [][]planned {
	var out [][]planned
	var cur []planned
	keys := map[ledger.RollupKey]bool{}
	for _, p := range plan {
		var add []ledger.RollupKey
		for k := range ledger.RollDelta(p.old, p.new) {
			if !keys[k] {
				add = append(add, k)
			}
		}
		if len(cur) > 0 && len(cur)+1+len(keys)+len(add) > MaxTransaction {
			out, cur, keys = append(out, cur), nil, map[ledger.RollupKey]bool{}
			add = add[:0]
			for k := range ledger.RollDelta(p.old, p.new) {
				add = append(add, k)
			}
		}
		cur = append(cur, p)
		for _, k := range add {
			keys[k] = true
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// commitChunk writes one transaction: the chunk's ledger rows and its
// rollups, each conditional on the version read. lost reports that
// another writer got there first (nothing was written).
func (l *Ledger) commitChunk(ctx context.Context, pk string, chunk []planned) (lost bool, err error) {
	delta := map[ledger.RollupKey]ledger.Rollup{}
	var samples []ledger.Sample
	at := l.now()
	for _, p := range chunk {
		for k, d := range ledger.RollDelta(p.old, p.new) {
			r := delta[k]
			r.RollupKey = k
			r.Add(d)
			delta[k] = r
		}
		var prevUsage ledger.Usage
		if p.old != nil {
			prevUsage = p.old.Usage
		}
		if s, ok := ledger.Delta(prevUsage, p.new, at); ok {
			samples = append(samples, s)
		}
	}
	var rkeys []ledger.RollupKey
	var rrows []string
	for k, d := range delta {
		if d.IsZero() {
			continue
		}
		rkeys = append(rkeys, k)
		rrows = append(rrows, rollupRowKey(k))
	}
	current, err := points[rollupEntity](ctx, &l.t, pk, rrows)
	if err != nil {
		return false, fmt.Errorf("read ledger rollups in %s: %w", pk, err)
	}
	actions := make([]aztables.TransactionAction, 0, len(chunk)+len(rkeys))
	for _, p := range chunk {
		b, err := json.Marshal(toLedgerEntity(*p.new))
		if err != nil {
			return false, fmt.Errorf("encode ledger entry: %w", err)
		}
		actions = append(actions, conditional(b, p.prev.found, p.prev.etag))
	}
	for i, k := range rkeys {
		r := delta[k]
		if current[i].found {
			r.Add(current[i].row.rollup())
		}
		b, err := json.Marshal(toRollupEntity(pk, r))
		if err != nil {
			return false, fmt.Errorf("encode ledger rollup: %w", err)
		}
		actions = append(actions, conditional(b, current[i].found, current[i].etag))
	}
	if _, err := l.t.client.SubmitTransaction(ctx, actions, nil); err != nil {
		if isTransactionFailure(err) {
			return true, nil
		}
		return false, fmt.Errorf("record %d ledger rows in %s: %w", len(chunk), pk, err)
	}
	l.emit(ctx, samples)
	return false, nil
}

// conditional is the action writing entity b over the version read: a
// replace if the row was there (it must not have changed since), an
// insert if not (it must still not be there).
func conditional(b []byte, found bool, etag azcore.ETag) aztables.TransactionAction {
	if !found {
		return aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: b}
	}
	return aztables.TransactionAction{ActionType: aztables.TransactionTypeUpdateReplace, Entity: b, IfMatch: &etag}
}

// Report is a tenant's month from its rollups: one range query over
// days × lines rows, however many ledger rows the month holds.
func (l *Ledger) Report(ctx context.Context, tenantID string, m ledger.Month) (ledger.Report, error) {
	rollups, err := l.Rollups(ctx, tenantID, m)
	if err != nil {
		return ledger.Report{}, err
	}
	return ledger.SummarizeRollups(tenantID, m, rollups), nil
}

// Rollups are a tenant-month's rollups, one per day and line.
func (l *Ledger) Rollups(ctx context.Context, tenantID string, m ledger.Month) ([]ledger.Rollup, error) {
	rows, err := l.rollups(ctx, tenantID, m)
	if err != nil {
		return nil, err
	}
	out := make([]ledger.Rollup, len(rows))
	for i := range rows {
		out[i] = rows[i].row.rollup()
	}
	return out, nil
}

// rollups reads a month's rollup rows with their versions.
func (l *Ledger) rollups(ctx context.Context, tenantID string, m ledger.Month) ([]stored[rollupEntity], error) {
	pk := Partition(tenantID, m)
	filter := "PartitionKey eq " + quote(pk) + " and RowKey ge " + quote(rollupPrefix) + " and RowKey lt " + quote(rollupEnd)
	var out []stored[rollupEntity]
	for b, err := range l.t.entities(ctx, &aztables.ListEntitiesOptions{Filter: &filter}) {
		if err != nil {
			return nil, fmt.Errorf("read ledger rollups of %s: %w", pk, err)
		}
		var s stored[rollupEntity]
		if err := json.Unmarshal(b, &s.row); err != nil {
			return nil, fmt.Errorf("decode ledger rollup in %s: %w", pk, err)
		}
		var meta struct {
			ETag string `json:"odata.etag"`
		}
		if err := json.Unmarshal(b, &meta); err != nil || meta.ETag == "" {
			return nil, fmt.Errorf("ledger rollup %s %s carries no ETag", pk, s.row.RowKey)
		}
		s.etag, s.found = azcore.ETag(meta.ETag), true
		out = append(out, s)
	}
	return out, nil
}

// RebuildReport says what a Rebuild found and changed.
type RebuildReport struct {
	// Rows is how many ledger rows the month holds; Rollups how many
	// rollups they sum into.
	Rows    int
	Rollups int
	// Corrected is how many rollup rows were wrong (missing, off or
	// superfluous) and rewritten.
	Corrected int
}

// Rebuild recomputes a tenant-month's rollups from its ledger rows and
// rewrites those that differ. It is exact while writers go on: each
// rollup row is rewritten only if unchanged since Rebuild read it before
// scanning (every write that moves a row's sums changes the rollup's
// version), else the month is read again, at most a few times.
func (l *Ledger) Rebuild(ctx context.Context, tenantID string, m ledger.Month) (RebuildReport, error) {
	pk := Partition(tenantID, m)
	const attempts = 5
	var rep RebuildReport
	for attempt := 1; ; attempt++ {
		current, err := l.rollups(ctx, tenantID, m)
		if err != nil {
			return rep, err
		}
		entries, err := l.Month(ctx, tenantID, m)
		if err != nil {
			return rep, err
		}
		want := ledger.Roll(entries)
		rep.Rows, rep.Rollups = len(entries), len(want)
		var actions []aztables.TransactionAction
		for _, c := range current {
			r := c.row.rollup()
			w, ok := want[r.RollupKey]
			delete(want, r.RollupKey)
			switch {
			case ok && w == r, !ok && r.IsZero(): // a rollup all of whose rows moved away sums nothing
				continue
			case !ok:
				etag := c.etag
				b, err := json.Marshal(map[string]string{"PartitionKey": pk, "RowKey": c.row.RowKey})
				if err != nil {
					return rep, fmt.Errorf("encode ledger rollup: %w", err)
				}
				actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeDelete, Entity: b, IfMatch: &etag})
				continue
			}
			b, err := json.Marshal(toRollupEntity(pk, w))
			if err != nil {
				return rep, fmt.Errorf("encode ledger rollup: %w", err)
			}
			actions = append(actions, conditional(b, true, c.etag))
		}
		for _, w := range want {
			b, err := json.Marshal(toRollupEntity(pk, w))
			if err != nil {
				return rep, fmt.Errorf("encode ledger rollup: %w", err)
			}
			actions = append(actions, conditional(b, false, ""))
		}
		if len(actions) > 0 {
			if err := l.t.ensure(ctx); err != nil {
				return rep, err
			}
		}
		lost := false
		for start := 0; start < len(actions); start += MaxTransaction {
			chunk := actions[start:min(start+MaxTransaction, len(actions))]
			if _, err := l.t.client.SubmitTransaction(ctx, chunk, nil); err != nil {
				if !isTransactionFailure(err) {
					return rep, fmt.Errorf("rewrite %d ledger rollups of %s: %w", len(chunk), pk, err)
				}
				lost = true
				continue
			}
			rep.Corrected += len(chunk)
		}
		if !lost {
			return rep, nil
		}
		if attempt == attempts {
			return rep, fmt.Errorf("rebuild the ledger rollups of %s: writers kept moving them, %d attempts", pk, attempts)
		}
	}
}
