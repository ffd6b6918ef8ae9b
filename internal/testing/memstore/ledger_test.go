package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/testing/memstore"
)

// ledgerStore is what the tests use of a ledger: the writes of both
// paths and the reads.
type ledgerStore interface {
	Record(ctx context.Context, e ledger.Entry) error
	RecordBatch(ctx context.Context, entries []ledger.Entry) error
	Abandon(ctx context.Context, entries []ledger.Entry) error
	Month(ctx context.Context, tenantID string, m ledger.Month) ([]ledger.Entry, error)
	Totals(ctx context.Context, tenantID string, m ledger.Month) (ledger.Usage, error)
}

// TestLedger_Contract runs one suite against the in-memory ledger and
// tablestore's on Azurite.
func TestLedger_Contract(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T, now func() time.Time) ledgerStore{
		"memstore": func(_ *testing.T, now func() time.Time) ledgerStore { return memstore.NewLedger(now) },
		"tablestore": func(t *testing.T, now func() time.Time) ledgerStore {
			svc, table := tables(t, "ledger")
			return tablestore.NewLedger(svc, tablestore.LedgerOptions{Table: table, Now: now})
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := &clock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
			ledgerContract(t, open(t, c.Now), c)
		})
	}
}

var dec = ledger.MonthOf(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))

func entry(tenantID, unit, deployment string, prompt, completion int64) ledger.Entry {
	return ledger.Entry{Tenant: tenantID, Month: dec, Path: ledger.Batch, Unit: unit, Alias: "summarize", Deployment: deployment,
		Usage: ledger.Usage{PromptTokens: prompt, CompletionTokens: completion, Requests: 1}}
}

// rows is a month's entries as text, for comparison.
func rows(t *testing.T, s ledgerStore, tenantID string) string {
	t.Helper()
	got, err := s.Month(context.Background(), tenantID, dec)
	if err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Error("Month returned nil, want an empty slice")
	}
	out := ""
	for _, e := range got {
		out += fmt.Sprintf("%s %s %s %d/%d unfinished=%v at %s; ", e.Key(), e.Unit, e.Deployment, e.PromptTokens, e.CompletionTokens,
			e.Unfinished, e.Recorded.UTC().Format(time.RFC3339))
	}
	return out
}

func ledgerContract(t *testing.T, s ledgerStore, c *clock) {
	ctx := context.Background()
	t0 := c.Now()
	stamp := func(es ...ledger.Entry) string {
		out := ""
		for _, e := range es {
			out += fmt.Sprintf("%s %s %s %d/%d unfinished=%v at %s; ", e.Key(), e.Unit, e.Deployment, e.PromptTokens, e.CompletionTokens,
				e.Unfinished, e.Recorded.UTC().Format(time.RFC3339))
		}
		return out
	}
	sorted := func(es ...ledger.Entry) []ledger.Entry {
		for i := range es {
			for j := i + 1; j < len(es); j++ {
				if es[j].Key() < es[i].Key() {
					es[i], es[j] = es[j], es[i]
				}
			}
		}
		return es
	}

	t.Run("empty and invalid", func(t *testing.T) {
		if got := rows(t, s, "tailspin"); got != "" {
			t.Errorf("a month with no rows: %s", got)
		}
		if u, err := s.Totals(ctx, "tailspin", dec); err != nil || u != (ledger.Usage{}) {
			t.Errorf("Totals of no rows = %+v, %v", u, err)
		}
		bad := entry("tailspin", "", "gpt-4o-mini-batch", 1, 1)
		if err := s.Record(ctx, bad); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("Record of an entry without a unit: %v, want ErrInvalid", err)
		}
		good := entry("tailspin", "batch:a/0", "gpt-4o-mini-batch", 1, 1)
		if err := s.RecordBatch(ctx, []ledger.Entry{good, bad}); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("RecordBatch with an invalid entry: %v, want ErrInvalid", err)
		}
		if got := rows(t, s, "tailspin"); got != "" {
			t.Errorf("a refused batch wrote rows: %s", got)
		}
	})

	t.Run("one row per unit, replaced", func(t *testing.T) {
		a := entry("contoso", "batch:job1/0", "gpt-4o-mini-batch", 100, 10)
		b := entry("contoso", "batch:job2/0", "gpt-4o-mini-batch", 200, 20)
		other := entry("fabrikam", "batch:job1/0", "gpt-4o-mini-batch", 7, 7)
		for _, e := range []ledger.Entry{a, b, other} {
			if err := s.Record(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		c.Set(t0.Add(time.Minute))
		a2 := a
		a2.PromptTokens, a2.CompletionTokens = 150, 15 // the same unit again: replaces
		if err := s.Record(ctx, a2); err != nil {
			t.Fatal(err)
		}
		a.Recorded, a2.Recorded, b.Recorded = t0, t0.Add(time.Minute), t0
		if got, want := rows(t, s, "contoso"), stamp(sorted(a2, b)...); got != want {
			t.Errorf("rows\n got  %s\n want %s", got, want)
		}
		u, err := s.Totals(ctx, "contoso", dec)
		if want := (ledger.Usage{PromptTokens: 350, CompletionTokens: 35, Requests: 2}); err != nil || u != want {
			t.Errorf("Totals = %+v, %v; want %+v", u, err, want)
		}
		// The same unit on another deployment is another row.
		d := entry("contoso", "batch:job1/0", "gpt-4o-batch", 5, 5)
		if err := s.Record(ctx, d); err != nil {
			t.Fatal(err)
		}
		d.Recorded = t0.Add(time.Minute)
		if got, want := rows(t, s, "contoso"), stamp(sorted(a2, b, d)...); got != want {
			t.Errorf("rows\n got  %s\n want %s", got, want)
		}
		if got := rows(t, s, "fabrikam"); got == "" {
			t.Error("fabrikam's row is gone")
		}
	})

	t.Run("batches and abandoned attempts", func(t *testing.T) {
		c.Set(t0.Add(time.Hour))
		x := entry("litware", "ingest:doc@1/chat", "gpt-4o-mini", 10, 1)
		y := entry("litware", "ingest:doc@1/embed", "gpt-4o-mini", 20, 0)
		x2 := x
		x2.PromptTokens = 30 // the same unit twice in one batch: the last wins
		if err := s.RecordBatch(ctx, []ledger.Entry{x, y, x2}); err != nil {
			t.Fatal(err)
		}
		x2.Recorded, y.Recorded = t0.Add(time.Hour), t0.Add(time.Hour)
		if got, want := rows(t, s, "litware"), stamp(sorted(x2, y)...); got != want {
			t.Errorf("rows\n got  %s\n want %s", got, want)
		}
		c.Set(t0.Add(2 * time.Hour))
		gone := entry("litware", "ingest:never-written", "gpt-4o-mini", 1, 1)
		if err := s.Abandon(ctx, []ledger.Entry{x, gone}); err != nil {
			t.Fatal(err)
		}
		// Marked unfinished, its usage and its time as they were; the row
		// that never existed is not made.
		x2.Unfinished = true
		if got, want := rows(t, s, "litware"), stamp(sorted(x2, y)...); got != want {
			t.Errorf("rows after Abandon\n got  %s\n want %s", got, want)
		}
		u, err := s.Totals(ctx, "litware", dec)
		if want := (ledger.Usage{PromptTokens: 50, CompletionTokens: 1, Requests: 2}); err != nil || u != want {
			t.Errorf("Totals with an abandoned row = %+v, %v; want %+v (abandoned attempts are billed)", u, err, want)
		}
	})
}
