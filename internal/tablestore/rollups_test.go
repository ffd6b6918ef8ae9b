package tablestore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tablestore"
)

// clock is a settable time source for the ledger's Recorded stamps, so that
// rewrites move rows between the rollups of different days.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// lossyTransport forwards every request, and for the transactions it is
// told to, drops the reply after the service has committed: the writer
// sees an error for a write that happened.
type lossyTransport struct {
	drop atomic.Int64 // how many transaction replies still to drop
}

func (t *lossyTransport) Do(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultClient.Do(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/$batch") || t.drop.Add(-1) < 0 {
		return res, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return nil, errors.New("connection reset after the transaction was sent")
}

// sameReport fails unless the month's report from its rollups equals the
// full scan's, and returns the scan's.
func sameReport(t *testing.T, l *tablestore.Ledger, tenantID string, m ledger.Month) ledger.Report {
	t.Helper()
	ctx := context.Background()
	entries, err := l.Month(ctx, tenantID, m)
	if err != nil {
		t.Fatal(err)
	}
	scan := ledger.Summarize(tenantID, m, entries)
	rolled, err := l.Report(ctx, tenantID, m)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(scan, rolled) {
		t.Fatalf("rollups disagree with the scan of %d rows:\nscan   %+v\nrollup %+v", len(entries), scan, rolled)
	}
	if tot, err := l.Totals(ctx, tenantID, m); err != nil || tot != scan.Total {
		t.Fatalf("Totals = %+v, %v; the scan sums %+v", tot, err, scan.Total)
	}
	return scan
}

// TestLedger_RollupsMatchScan: after a random sequence of writes, rewrites
// (moving rows between days, lines' abandoned parts and back), identical
// redeliveries, batches with repeats, concurrent writers of the same
// units, abandon marks and writes whose reply was lost after they
// committed, the month's report from its rollups is the full scan's. Rows
// written without their rollups (a crash between the two, or a version
// that kept none) make them disagree, Rebuild repairs them while writers
// go on, and later writes stay exact.
func TestLedger_RollupsMatchScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	clk := &clock{now: time.Date(2026, 11, 3, 22, 0, 0, 0, time.UTC)}
	name := tableName(t, "roll")
	l := tablestore.NewLedger(service(t), tablestore.LedgerOptions{Table: name, Now: clk.Now})
	lossy := &lossyTransport{}
	lossySvc, err := aztables.NewServiceClientFromConnectionString(sharedAzurite(t).ConnectionString(),
		&aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: lossy, Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	lossyLedger := tablestore.NewLedger(lossySvc, tablestore.LedgerOptions{Table: name, Now: clk.Now})

	m := mustMonth(t, "2026-11")
	lines := []struct {
		path              ledger.Path
		alias, deployment string
	}{
		{ledger.Queue, "summarize", "gpt-4o-mini"},
		{ledger.Queue, "ingest", "text-embedding-3-small"},
		{ledger.Batch, "summarize", "gpt-4o-mini-batch"},
	}
	random := func(u int) ledger.Entry {
		ln := lines[u%len(lines)]
		p := rng.Int64N(5000)
		c := rng.Int64N(800)
		req := 1 + rng.Int64N(4)
		return ledger.Entry{Tenant: "contoso", Month: m, Path: ln.path, Unit: fmt.Sprintf("unit/%d", u), Alias: ln.alias, Deployment: ln.deployment,
			Usage: ledger.Usage{PromptTokens: p, CompletionTokens: c, CachedTokens: p / 3, ReasoningTokens: c / 4, Requests: req,
				Refusals: rng.Int64N(req + 1), Cost: catalog.Money(1 + rng.Int64N(1e6))},
			Unfinished: rng.IntN(4) == 0}
	}
	const units = 60
	last := map[int]ledger.Entry{}
	var lastMu sync.Mutex
	write := func(w *tablestore.Ledger, e ledger.Entry) error {
		u, _ := strconv.Atoi(strings.TrimPrefix(e.Unit, "unit/"))
		err := w.Record(ctx, e)
		lastMu.Lock()
		last[u] = e
		lastMu.Unlock()
		return err
	}
	lostReplies := 0
	for step := range 300 {
		if rng.IntN(20) == 0 {
			clk.advance(time.Duration(rng.IntN(30)) * time.Hour)
		}
		switch k := rng.IntN(10); {
		case k < 4: // a write or a rewrite of a unit
			if err := write(l, random(rng.IntN(units))); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		case k < 5: // a redelivery writes the same entry again
			for u, e := range last {
				if err := l.Record(ctx, e); err != nil {
					t.Fatalf("step %d: redeliver unit %d: %v", step, u, err)
				}
				break
			}
		case k < 6: // a batch, with a unit twice: the last wins
			var es []ledger.Entry
			for range 1 + rng.IntN(8) {
				es = append(es, random(rng.IntN(units)))
			}
			es = append(es, random(0))
			if err := l.RecordBatch(ctx, es); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		case k < 7: // abandon marks, on rows that exist and rows that do not
			es := []ledger.Entry{random(rng.IntN(units)), random(units + rng.IntN(5))}
			if err := l.Abandon(ctx, es); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		case k < 8: // concurrent writers of overlapping units
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			es := make([]ledger.Entry, 8)
			for i := range es {
				es[i] = random(rng.IntN(6))
			}
			for _, e := range es {
				wg.Go(func() { errs <- write(l, e) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatalf("step %d: concurrent write: %v", step, err)
				}
			}
		case k < 9: // the reply of a committed transaction is lost; the writer retries
			lossy.drop.Store(1)
			u := rng.IntN(units)
			e := random(u)
			if err := lossyLedger.Record(ctx, e); err == nil {
				t.Fatalf("step %d: a lost reply went unnoticed", step)
			}
			lostReplies++
			if err := l.Record(ctx, e); err != nil {
				t.Fatalf("step %d: retry after a lost reply: %v", step, err)
			}
		default:
			sameReport(t, l, "contoso", m)
		}
	}
	scan := sameReport(t, l, "contoso", m)
	if scan.Entries < units/2 || len(scan.Lines) != len(lines) || scan.Abandoned.TotalTokens() == 0 || lostReplies == 0 {
		t.Fatalf("the sequence exercised too little: %d rows, %d lines, %d abandoned tokens, %d lost replies",
			scan.Entries, len(scan.Lines), scan.Abandoned.TotalTokens(), lostReplies)
	}
	if rep, err := l.Rebuild(ctx, "contoso", m); err != nil || rep.Corrected != 0 || rep.Rows != scan.Entries {
		t.Fatalf("Rebuild of exact rollups = %+v, %v; want nothing corrected", rep, err)
	}

	// Rows written without their rollups: a new unit, and a rewrite.
	clk.advance(26 * time.Hour)
	for _, e := range []ledger.Entry{random(units + 10), random(3)} {
		if err := l.WriteRowOnly(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := l.Month(ctx, "contoso", m)
	if err != nil {
		t.Fatal(err)
	}
	if rolled, err := l.Report(ctx, "contoso", m); err != nil || reflect.DeepEqual(rolled, ledger.Summarize("contoso", m, entries)) {
		t.Fatalf("rows written without rollups left the report equal to the scan (%v): the test shows nothing", err)
	}
	// Rebuild repairs them, while writers go on.
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for g := range 4 {
		es := make([]ledger.Entry, 10)
		for i := range es {
			es[i] = random((g*10 + i) % units)
		}
		wg.Go(func() {
			for _, e := range es {
				errs <- write(l, e)
			}
		})
	}
	var rep tablestore.RebuildReport
	for range 5 {
		if rep, err = l.Rebuild(ctx, "contoso", m); err == nil {
			break
		}
		t.Logf("rebuild while writers go on: %v", err)
	}
	if err != nil || rep.Corrected == 0 {
		t.Fatalf("Rebuild = %+v, %v; want the off rollups corrected", rep, err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	sameReport(t, l, "contoso", m)
	// Later writes of the repaired rows stay exact.
	if err := write(l, random(3)); err != nil {
		t.Fatal(err)
	}
	if err := l.Abandon(ctx, []ledger.Entry{random(units + 10)}); err != nil {
		t.Fatal(err)
	}
	sameReport(t, l, "contoso", m)
}

// TestLedger_RebuildEmptyAndStale: a month with no rows has no rollups to
// rebuild; rollups left behind by rows that moved away are removed.
func TestLedger_RebuildEmptyAndStale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{now: time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)}
	l := tablestore.NewLedger(service(t), tablestore.LedgerOptions{Table: tableName(t, "rb"), Now: clk.Now})
	m := mustMonth(t, "2026-11")
	if rep, err := l.Rebuild(ctx, "contoso", m); err != nil || rep != (tablestore.RebuildReport{}) {
		t.Fatalf("Rebuild(no table) = %+v, %v", rep, err)
	}
	e := unit("contoso", "2026-11", "a", 100)
	if err := l.Record(ctx, e); err != nil {
		t.Fatal(err)
	}
	clk.advance(48 * time.Hour)
	// The rewrite lands on another day without its rollups: the first
	// day's rollup is stale, the second's missing.
	if err := l.WriteRowOnly(ctx, e); err != nil {
		t.Fatal(err)
	}
	rep, err := l.Rebuild(ctx, "contoso", m)
	if err != nil || rep != (tablestore.RebuildReport{Rows: 1, Rollups: 1, Corrected: 2}) {
		t.Fatalf("Rebuild = %+v, %v; want the stale rollup removed and the missing one written", rep, err)
	}
	if r := sameReport(t, l, "contoso", m); r.Entries != 1 || r.Total.PromptTokens != 100 {
		t.Fatalf("report = %+v", r)
	}
}
