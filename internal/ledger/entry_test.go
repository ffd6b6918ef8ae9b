package ledger_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tenant"
)

func month(t *testing.T, s string) ledger.Month {
	t.Helper()
	m, err := ledger.ParseMonth(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func entry(t *testing.T) ledger.Entry {
	return ledger.Entry{
		Tenant: "contoso", Month: month(t, "2026-11"), Path: ledger.Batch, Unit: "job/op_123",
		Alias: "summarize", Deployment: "gpt-4o-mini-batch",
		Usage: ledger.Usage{PromptTokens: 1000, CompletionTokens: 200, CachedTokens: 100, ReasoningTokens: 50, Requests: 10, Refusals: 1},
	}
}

func TestEntry_Key(t *testing.T) {
	t.Parallel()
	a := entry(t)
	b := a
	b.PromptTokens, b.Recorded = 5, b.Recorded.AddDate(0, 0, 1)
	if a.Key() != b.Key() {
		t.Errorf("same unit, different counts: keys %q and %q", a.Key(), b.Key())
	}
	if !strings.HasPrefix(a.Key(), "batch-") || len(a.Key()) != len("batch-")+32 {
		t.Errorf("Key() = %q", a.Key())
	}
	for name, mutate := range map[string]func(*ledger.Entry){
		"unit":       func(e *ledger.Entry) { e.Unit = "job/op_124" },
		"alias":      func(e *ledger.Entry) { e.Alias = "extract" },
		"deployment": func(e *ledger.Entry) { e.Deployment = "gpt-4o-mini-batch-2" },
		"path":       func(e *ledger.Entry) { e.Path = ledger.Queue },
		"boundary":   func(e *ledger.Entry) { e.Unit, e.Alias = "job/op_123\x00summarize", "x" },
	} {
		c := entry(t)
		mutate(&c)
		if c.Key() == a.Key() {
			t.Errorf("changing %s kept key %q", name, a.Key())
		}
	}
	for _, c := range a.Key() {
		if strings.ContainsRune(`/\#?`, c) || c < 0x20 {
			t.Errorf("Key() %q holds a character Table Storage forbids", a.Key())
		}
	}
}

func TestEntry_Validate(t *testing.T) {
	t.Parallel()
	good := entry(t)
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate(good) = %v", err)
	}
	tests := map[string]func(*ledger.Entry){
		"tenant":            func(e *ledger.Entry) { e.Tenant = "a/b" },
		"month":             func(e *ledger.Entry) { e.Month = ledger.Month{} },
		"path":              func(e *ledger.Entry) { e.Path = "sync" },
		"unit":              func(e *ledger.Entry) { e.Unit = "" },
		"alias":             func(e *ledger.Entry) { e.Alias = "Summarize" },
		"deployment":        func(e *ledger.Entry) { e.Deployment = "a#b" },
		"prompt_tokens":     func(e *ledger.Entry) { e.PromptTokens = -1 },
		"cached_tokens":     func(e *ledger.Entry) { e.CachedTokens = e.PromptTokens + 1 },
		"reasoning_tokens":  func(e *ledger.Entry) { e.ReasoningTokens = e.CompletionTokens + 1 },
		"refusals":          func(e *ledger.Entry) { e.Refusals = e.Requests + 1 },
		"unit control char": func(e *ledger.Entry) { e.Unit = "a\nb" },
		"unit too long":     func(e *ledger.Entry) { e.Unit = strings.Repeat("u", ledger.MaxUnitLen+1) },
	}
	for name, mutate := range tests {
		e := entry(t)
		mutate(&e)
		err := e.Validate()
		field := strings.Fields(name)[0]
		if !errors.Is(err, ledger.ErrInvalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: Validate() = %v, want ErrInvalid naming %s", name, err, field)
		}
	}
}

func TestEntry_Estimate(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../models.json")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	e := entry(t)
	e.PromptTokens, e.CachedTokens, e.CompletionTokens = 1_000_000, 0, 1_000_000
	if err := e.Estimate(cat); err != nil {
		t.Fatal(err)
	}
	if e.Cost.Dollars() != "0.375000" { // batch: 0.075 + 0.30
		t.Errorf("batch cost = %s, want 0.375000", e.Cost.Dollars())
	}
	q := e
	q.Path, q.Deployment = ledger.Queue, "gpt-4o-mini"
	if err := q.Estimate(cat); err != nil || q.Cost.Dollars() != "0.750000" {
		t.Errorf("queue cost = %s, %v; want 0.750000", q.Cost.Dollars(), err)
	}
	q.Deployment = "gpt-4o-mini-batch"
	if err := q.Estimate(cat); !errors.Is(err, catalog.ErrUnknown) {
		t.Errorf("Estimate(batch deployment on the queue path) = %v", err)
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	m := month(t, "2026-11")
	mk := func(path ledger.Path, alias, dep string, prompt, completion int64, cost catalog.Money) ledger.Entry {
		return ledger.Entry{Tenant: "contoso", Month: m, Path: path, Unit: "u", Alias: alias, Deployment: dep,
			Usage: ledger.Usage{PromptTokens: prompt, CompletionTokens: completion, Requests: 1, Cost: cost}}
	}
	r := ledger.Summarize("contoso", m, []ledger.Entry{
		mk(ledger.Queue, "summarize", "gpt-4o-mini", 10, 1, 100),
		mk(ledger.Batch, "summarize", "gpt-4o-mini-batch", 20, 2, 50),
		mk(ledger.Queue, "summarize", "gpt-4o-mini", 30, 3, 300),
		mk(ledger.Queue, "embed", "text-embedding-3-small", 5, 0, 1),
	})
	if len(r.Lines) != 3 || r.Entries != 4 {
		t.Fatalf("Summarize: %+v", r)
	}
	first := r.Lines[0]
	if first.Path != ledger.Batch || r.Lines[1].Alias != "embed" || r.Lines[2].PromptTokens != 40 || r.Lines[2].Requests != 2 || r.Lines[2].Cost != 400 {
		t.Errorf("lines = %+v", r.Lines)
	}
	if len(r.Paths) != 2 || r.Paths[0].Path != ledger.Batch || r.Paths[1].PromptTokens != 45 {
		t.Errorf("paths = %+v", r.Paths)
	}
	if r.Total.PromptTokens != 65 || r.Total.CompletionTokens != 6 || r.Total.TotalTokens() != 71 || r.Total.Cost != 451 || r.Total.Requests != 4 {
		t.Errorf("total = %+v", r.Total)
	}
	empty := ledger.Summarize("contoso", m, nil)
	if len(empty.Lines) != 0 || empty.Total != (ledger.Usage{}) || empty.Lines == nil {
		t.Errorf("empty month: %+v", empty)
	}
}

// TestSummarize_Abandoned: the tokens of unfinished attempts are in every
// total (they were billed) and apart, per line, path and month, in the
// JSON view and the CSV.
func TestSummarize_Abandoned(t *testing.T) {
	t.Parallel()
	m := month(t, "2026-11")
	mk := func(unit string, prompt, completion int64, unfinished bool) ledger.Entry {
		return ledger.Entry{Tenant: "contoso", Month: m, Path: ledger.Queue, Unit: unit, Alias: "ingest", Deployment: "text-embedding-3-small",
			Usage: ledger.Usage{PromptTokens: prompt, CompletionTokens: completion, Requests: 1}, Unfinished: unfinished}
	}
	r := ledger.Summarize("contoso", m, []ledger.Entry{mk("doc#1", 700, 0, true), mk("doc#2", 700, 0, false), mk("other#1", 50, 5, false)})
	if len(r.Lines) != 1 || r.Lines[0].TotalTokens() != 1455 || r.Lines[0].Abandoned.TotalTokens() != 700 || r.Lines[0].CompletedTokens() != 755 {
		t.Fatalf("lines = %+v; want 1,455 tokens, 700 of them abandoned", r.Lines)
	}
	if r.Paths[0].Abandoned.PromptTokens != 700 || r.Abandoned.TotalTokens() != 700 || r.Total.TotalTokens() != 1455 {
		t.Errorf("paths %+v, total %+v, abandoned %+v", r.Paths, r.Total, r.Abandoned)
	}
	v := r.View(0)
	if v.Lines[0].CompletedTokens != 755 || v.Lines[0].AbandonedTokens != 700 || v.Paths[0].AbandonedTokens != 700 ||
		v.CompletedTokens != 755 || v.AbandonedTokens != 700 {
		t.Errorf("view = %+v", v)
	}
	var b strings.Builder
	if err := ledger.WriteCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(rows) != 2 || !strings.HasSuffix(rows[0], ",completed_tokens,abandoned_tokens") || !strings.HasSuffix(rows[1], ",755,700") {
		t.Errorf("CSV = %q", b.String())
	}
}

type fixedTotals struct {
	u   ledger.Usage
	err error
}

func (f fixedTotals) Totals(context.Context, string, ledger.Month) (ledger.Usage, error) {
	return f.u, f.err
}

func TestBudgets_Check(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := month(t, "2026-11")
	used := fixedTotals{u: ledger.Usage{PromptTokens: 700, CompletionTokens: 200, CachedTokens: 500}}
	withBudget := tenant.Tenant{ID: "contoso", MonthlyTokenBudget: 1000}
	b := ledger.NewBudgets(used)

	if err := b.Check(ctx, withBudget, m, 100); err != nil {
		t.Errorf("Check(exactly fits) = %v", err)
	}
	err := b.Check(ctx, withBudget, m, 101)
	var be *ledger.BudgetError
	if !errors.As(err, &be) || !errors.Is(err, ledger.ErrBudgetExceeded) || be.Used != 900 || be.Budget != 1000 || be.Requested != 101 {
		t.Fatalf("Check(over) = %v", err)
	}
	if !strings.Contains(err.Error(), "900 used + 101 requested > 1000") {
		t.Errorf("BudgetError message %q lacks the numbers", err)
	}
	if err := b.Check(ctx, tenant.Tenant{ID: "contoso"}, m, 1<<40); err != nil {
		t.Errorf("Check(no budget) = %v", err)
	}
	s, err := b.Status(ctx, withBudget, m)
	if err != nil || s != (ledger.BudgetStatus{Budget: 1000, Used: 900, Remaining: 100}) {
		t.Errorf("Status = %+v, %v", s, err)
	}
	boom := errors.New("table unavailable")
	if err := ledger.NewBudgets(fixedTotals{err: boom}).Check(ctx, withBudget, m, 1); !errors.Is(err, boom) || errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Errorf("Check(storage down) = %v, want the storage error", err)
	}
}
