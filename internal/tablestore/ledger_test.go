package tablestore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/outcome"
	"github.com/offpath/offpath/internal/tablestore"
)

func mustMonth(t testing.TB, s string) ledger.Month {
	t.Helper()
	m, err := ledger.ParseMonth(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func unit(tenantID, month, u string, prompt int64) ledger.Entry {
	m, _ := ledger.ParseMonth(month)
	return ledger.Entry{
		Tenant: tenantID, Month: m, Path: ledger.Batch, Unit: u, Alias: "summarize", Deployment: "gpt-4o-mini-batch",
		Usage: ledger.Usage{PromptTokens: prompt, CompletionTokens: prompt / 10, CachedTokens: prompt / 2, ReasoningTokens: prompt / 20,
			Requests: 3, Refusals: 1, Cost: 1234},
	}
}

func TestLedger_RecordRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLedger(t, func() time.Time { return t0 })
	e := unit("contoso", "2026-11", "https://acct.blob.core.windows.net/incoming/contoso/a.pdf#\"0x8DC\"", 1_000_000_000_000)
	if err := l.Record(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, err := l.Month(ctx, "contoso", e.Month)
	if err != nil || len(got) != 1 {
		t.Fatalf("Month = %+v, %v", got, err)
	}
	g := got[0]
	if g.Unit != e.Unit || g.Usage != e.Usage || g.Path != e.Path || g.Alias != e.Alias || g.Deployment != e.Deployment || !g.Recorded.Equal(t0) || g.Key() != e.Key() {
		t.Errorf("round trip:\n got %+v\nwant %+v", g, e)
	}
}

func TestLedger_SameUnitCountsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLedger(t, nil)
	m := mustMonth(t, "2026-11")
	e := unit("contoso", "2026-11", "job/op_1", 100)
	for range 2 {
		if err := l.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// And concurrently, from several goroutines, by both write paths.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				errs <- l.Record(ctx, e)
			} else {
				errs <- l.RecordBatch(ctx, []ledger.Entry{e, e})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.Month(ctx, "contoso", m)
	if err != nil || len(got) != 1 || got[0].Usage != e.Usage {
		t.Fatalf("after 20 writes of one unit: %+v, %v", got, err)
	}

	// Two different units add up.
	if err := l.Record(ctx, unit("contoso", "2026-11", "job/op_2", 50)); err != nil {
		t.Fatal(err)
	}
	tot, err := l.Totals(ctx, "contoso", m)
	if err != nil || tot.PromptTokens != 150 || tot.Requests != 6 || tot.Cost != 2468 {
		t.Errorf("Totals = %+v, %v; want 150 prompt tokens, 6 requests", tot, err)
	}
	// The same unit on another deployment is another row.
	other := unit("contoso", "2026-11", "job/op_2", 7)
	other.Deployment = "gpt-4o-mini-batch-eu"
	if err := l.Record(ctx, other); err != nil {
		t.Fatal(err)
	}
	if tot, _ := l.Totals(ctx, "contoso", m); tot.PromptTokens != 157 {
		t.Errorf("Totals after a second deployment = %d prompt tokens, want 157", tot.PromptTokens)
	}
}

func TestLedger_RecordBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLedger(t, nil)
	var entries []ledger.Entry
	for i := range 250 {
		entries = append(entries, unit("contoso", "2026-11", fmt.Sprintf("msg/%d", i), 10))
	}
	for i := range 30 {
		entries = append(entries, unit("acme", "2026-11", fmt.Sprintf("msg/%d", i), 1))
	}
	entries = append(entries, unit("contoso", "2026-11", "msg/7", 1000)) // a later write of a unit wins
	if err := l.RecordBatch(ctx, entries); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordBatch(ctx, entries); err != nil { // a retry changes nothing
		t.Fatal(err)
	}
	m := mustMonth(t, "2026-11")
	got, err := l.Month(ctx, "contoso", m)
	if err != nil || len(got) != 250 {
		t.Fatalf("contoso rows = %d, %v; want 250", len(got), err)
	}
	r := ledger.Summarize("contoso", m, got)
	if r.Total.PromptTokens != 249*10+1000 {
		t.Errorf("contoso prompt tokens = %d, want %d", r.Total.PromptTokens, 249*10+1000)
	}
	if tot, _ := l.Totals(ctx, "acme", m); tot.PromptTokens != 30 || tot.Requests != 90 {
		t.Errorf("acme totals = %+v", tot)
	}
	bad := unit("contoso", "2026-11", "", 1)
	if err := l.RecordBatch(ctx, []ledger.Entry{unit("contoso", "2026-11", "fine", 1), bad}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("RecordBatch(one invalid) = %v, want ErrInvalid", err)
	}
	if got, _ := l.Month(ctx, "contoso", m); len(got) != 250 {
		t.Errorf("an invalid batch wrote rows: %d", len(got))
	}
	if err := l.RecordBatch(ctx, nil); err != nil {
		t.Errorf("RecordBatch(nil) = %v", err)
	}
}

func TestLedger_MonthsAndTenantsStayApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLedger(t, nil)
	empty := mustMonth(t, "2026-10")
	// Nothing written yet: not even the table exists.
	if got, err := l.Month(ctx, "contoso", empty); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Month(no table) = %#v, %v; want an empty list", got, err)
	}
	// Work near midnight UTC at the end of November, attributed by the
	// unit's own time, lands in the month of that time in UTC.
	ny := time.FixedZone("EST", -5*3600)
	late := unit("contoso", "2026-11", "late", 1)
	late.Month = ledger.MonthOf(time.Date(2026, 11, 30, 20, 0, 0, 0, ny)) // 01:00 UTC on 1 December
	early := unit("contoso", "2026-11", "early", 2)
	early.Month = ledger.MonthOf(time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC))
	for _, e := range []ledger.Entry{late, early, unit("contoso-eu", "2026-11", "x", 4), unit("con", "2026-11", "x", 8)} {
		if err := l.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		tenant, month string
		want          int64
	}{
		{"contoso", "2026-11", 2},
		{"contoso", "2026-12", 1},
		{"contoso", "2026-10", 0},
		{"contoso-eu", "2026-11", 4},
		{"con", "2026-11", 8},
		{"nobody", "2026-11", 0},
	}
	for _, tt := range tests {
		tot, err := l.Totals(ctx, tt.tenant, mustMonth(t, tt.month))
		if err != nil || tot.PromptTokens != tt.want {
			t.Errorf("Totals(%s, %s) = %d, %v; want %d", tt.tenant, tt.month, tot.PromptTokens, err, tt.want)
		}
	}
}

func TestLedger_RejectsInvalidEntries(t *testing.T) {
	t.Parallel()
	l := newLedger(t, nil)
	e := unit("contoso|2026-12", "2026-11", "u", 1)
	if err := l.Record(context.Background(), e); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("Record(tenant with a separator) = %v, want ErrInvalid", err)
	}
}

// A write that cannot reach storage fails loudly, and the failure is
// transient (retried by the host), never swallowed.
func TestLedger_WriteErrorsSurfaceAsTransient(t *testing.T) {
	t.Parallel()
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" +
		"Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;TableEndpoint=http://127.0.0.1:1/devstoreaccount1;"})
	if err != nil {
		t.Fatal(err)
	}
	l := tablestore.NewLedger(svc, tablestore.LedgerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for name, write := range map[string]func() error{
		"Record":      func() error { return l.Record(ctx, unit("contoso", "2026-11", "u", 1)) },
		"RecordBatch": func() error { return l.RecordBatch(ctx, []ledger.Entry{unit("contoso", "2026-11", "u", 1)}) },
	} {
		err := write()
		if err == nil {
			t.Fatalf("%s against no storage = nil", name)
		}
		if outcome.Of(err) != outcome.Transient {
			t.Errorf("%s error %v classifies as %v, want transient", name, err, outcome.Of(err))
		}
	}
}
