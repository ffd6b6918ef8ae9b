package tablestore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
)

// MaxTransaction is Table Storage's limit of entities per transaction (all
// in one partition).
const MaxTransaction = 100

// Ledger stores ledger entries.
type Ledger struct {
	t        table
	now      func() time.Time
	parallel int
	metrics  ledger.Metrics
}

// LedgerOptions configure a Ledger.
type LedgerOptions struct {
	// Table is the table name (default DefaultLedgerTable).
	Table string
	// Now stamps entries' Recorded time (default time.Now).
	Now func() time.Time
	// Parallel is how many partitions (tenant-months) RecordBatch writes
	// at once (default 1); the transactions of one partition go one after
	// the other, as they move the same rollups.
	Parallel int
	// Metrics, when set, receives every write's change to the ledger's
	// tokens (the rows it replaces are read anyway, for the rollups),
	// after the write. A writer that dies between its write and the emit, or a
	// write that committed but whose reply was lost, loses that sample
	// (the ledger keeps the tokens).
	Metrics ledger.Metrics
}

// NewLedger returns the ledger store.
func NewLedger(svc *aztables.ServiceClient, o LedgerOptions) *Ledger {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Ledger{t: table{client: svc.NewClient(cmp.Or(o.Table, DefaultLedgerTable))}, now: o.Now, parallel: max(o.Parallel, 1), metrics: o.Metrics}
}

// Partition is the partition key of a tenant's month: "<tenant>|<YYYY-MM>".
func Partition(tenantID string, m ledger.Month) string { return tenantID + "|" + m.String() }

// Record writes one entry, replacing the row of the same unit if there is
// one, with the month's rollups in the same transaction. An error means
// the entry may not be stored: retry it.
func (l *Ledger) Record(ctx context.Context, e ledger.Entry) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if err := l.t.ensure(ctx); err != nil {
		return err
	}
	return l.commit(ctx, e.Tenant, e.Month, []change{l.replace(e, l.now())})
}

// replace is the change that writes e, stamped at.
func (l *Ledger) replace(e ledger.Entry, at time.Time) change {
	e.Recorded = at.UTC()
	return change{key: e.Key(), next: func(*ledger.Entry) *ledger.Entry { return &e }}
}

// Abandon marks the rows of entries (found by their keys; their usage is
// not read) as spent by attempts that did not finish, leaving their usage
// as it is. A row that does not exist is skipped: that attempt spent
// nothing.
func (l *Ledger) Abandon(ctx context.Context, entries []ledger.Entry) error {
	mark := func(prev *ledger.Entry) *ledger.Entry {
		if prev == nil || prev.Unfinished {
			return nil
		}
		next := *prev
		next.Unfinished = true
		return &next
	}
	for i := range entries {
		e := &entries[i]
		if err := l.commit(ctx, e.Tenant, e.Month, []change{{key: e.Key(), next: mark}}); err != nil {
			return fmt.Errorf("mark ledger entry %s %s abandoned: %w", Partition(e.Tenant, e.Month), e.Key(), err)
		}
	}
	return nil
}

// RecordBatch writes many entries with as few requests as Table Storage
// allows: per partition, transactions of up to 100 rows, the rollups they
// move included. Entries of the same unit in one call collapse to the
// last. Each transaction is atomic; on error some transactions may have
// been written and others not, and calling RecordBatch again with the same
// entries is always safe.
func (l *Ledger) RecordBatch(ctx context.Context, entries []ledger.Entry) error {
	if err := ledger.ValidateAll(entries); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	if err := l.t.ensure(ctx); err != nil {
		return err
	}
	now := l.now()
	// Group by partition, keeping first-seen order; the last write of a
	// unit wins, as it would with one call per entry.
	type group struct {
		tenant  string
		month   ledger.Month
		order   []string
		changes map[string]change
	}
	groups := map[string]*group{}
	var partitions []string
	for i := range entries {
		e := entries[i]
		pk := Partition(e.Tenant, e.Month)
		g := groups[pk]
		if g == nil {
			g = &group{tenant: e.Tenant, month: e.Month, changes: map[string]change{}}
			groups[pk] = g
			partitions = append(partitions, pk)
		}
		c := l.replace(e, now)
		if _, seen := g.changes[c.key]; !seen {
			g.order = append(g.order, c.key)
		}
		g.changes[c.key] = c
	}
	// Partitions in parallel; within one, transactions one after the other
	// (they move the same rollups).
	errs := make([]error, len(partitions))
	sem := make(chan struct{}, l.parallel)
	var wg sync.WaitGroup
	for i, pk := range partitions {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			g := groups[pk]
			changes := make([]change, len(g.order))
			for j, k := range g.order {
				changes[j] = g.changes[k]
			}
			errs[i] = l.commit(ctx, g.tenant, g.month, changes)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Month returns every entry of a tenant's month: one partition query.
func (l *Ledger) Month(ctx context.Context, tenantID string, m ledger.Month) ([]ledger.Entry, error) {
	var out []ledger.Entry
	err := l.scan(ctx, tenantID, m, func(e *ledgerEntity) {
		out = append(out, e.entry(tenantID, m))
	})
	if out == nil {
		out = []ledger.Entry{}
	}
	return out, err
}

// Totals sums a tenant's month from its rollups.
func (l *Ledger) Totals(ctx context.Context, tenantID string, m ledger.Month) (ledger.Usage, error) {
	r, err := l.Report(ctx, tenantID, m)
	return r.Total, err
}

func (l *Ledger) scan(ctx context.Context, tenantID string, m ledger.Month, each func(*ledgerEntity)) error {
	filter := "PartitionKey eq " + quote(Partition(tenantID, m)) + " and RowKey lt " + quote(ledgerRowEnd)
	for b, err := range l.t.entities(ctx, &aztables.ListEntitiesOptions{Filter: &filter}) {
		if err != nil {
			return fmt.Errorf("read ledger %s: %w", Partition(tenantID, m), err)
		}
		var e ledgerEntity
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("decode ledger row in %s: %w", Partition(tenantID, m), err)
		}
		each(&e)
	}
	return nil
}

// ledgerEntity is a ledger row. Counters are Edm.Int64: a month of batch
// usage can pass 2^31 tokens, and costs are nano-dollars.
type ledgerEntity struct {
	PartitionKey string
	RowKey       string
	Tenant       string `json:",omitempty"`
	Month        string `json:",omitempty"`
	Path         string `json:",omitempty"`
	Unit         string `json:",omitempty"`
	Alias        string `json:",omitempty"`
	Deployment   string `json:",omitempty"`
	usageColumns
	Unfinished   bool       `json:",omitempty"`
	Recorded     *time.Time `json:",omitempty"`
	RecordedType string     `json:"Recorded@odata.type,omitempty"`
}

func toLedgerEntity(e ledger.Entry) ledgerEntity {
	rec := e.Recorded.UTC()
	return ledgerEntity{
		PartitionKey: Partition(e.Tenant, e.Month), RowKey: e.Key(),
		Tenant: e.Tenant, Month: e.Month.String(), Path: string(e.Path), Unit: e.Unit, Alias: e.Alias, Deployment: e.Deployment,
		usageColumns: toUsageColumns(e.Usage), Unfinished: e.Unfinished,
		Recorded: &rec, RecordedType: edmDateTime,
	}
}

// usageColumns are a ledger.Usage as Edm.Int64 properties, in the ledger's
// rows and the audit's.
type usageColumns struct {
	PromptTokens         int64  `json:",string"`
	PromptTokensType     string `json:"PromptTokens@odata.type"`
	CompletionTokens     int64  `json:",string"`
	CompletionTokensType string `json:"CompletionTokens@odata.type"`
	CachedTokens         int64  `json:",string"`
	CachedTokensType     string `json:"CachedTokens@odata.type"`
	ReasoningTokens      int64  `json:",string"`
	ReasoningTokensType  string `json:"ReasoningTokens@odata.type"`
	Requests             int64  `json:",string"`
	RequestsType         string `json:"Requests@odata.type"`
	Refusals             int64  `json:",string"`
	RefusalsType         string `json:"Refusals@odata.type"`
	CostNanoUSD          int64  `json:",string"`
	CostNanoUSDType      string `json:"CostNanoUSD@odata.type"`
}

func toUsageColumns(u ledger.Usage) usageColumns {
	return usageColumns{
		PromptTokens: u.PromptTokens, PromptTokensType: edmInt64,
		CompletionTokens: u.CompletionTokens, CompletionTokensType: edmInt64,
		CachedTokens: u.CachedTokens, CachedTokensType: edmInt64,
		ReasoningTokens: u.ReasoningTokens, ReasoningTokensType: edmInt64,
		Requests: u.Requests, RequestsType: edmInt64,
		Refusals: u.Refusals, RefusalsType: edmInt64,
		CostNanoUSD: int64(u.Cost), CostNanoUSDType: edmInt64,
	}
}

func (c *usageColumns) usage() ledger.Usage {
	return ledger.Usage{
		PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, CachedTokens: c.CachedTokens,
		ReasoningTokens: c.ReasoningTokens, Requests: c.Requests, Refusals: c.Refusals, Cost: catalog.Money(c.CostNanoUSD),
	}
}

func (e *ledgerEntity) entry(tenantID string, m ledger.Month) ledger.Entry {
	out := ledger.Entry{
		Tenant: tenantID, Month: m, Path: ledger.Path(e.Path), Unit: e.Unit, Alias: e.Alias, Deployment: e.Deployment,
		Usage: e.usage(), Unfinished: e.Unfinished,
	}
	if e.Recorded != nil {
		out.Recorded = e.Recorded.UTC()
	}
	return out
}
