package api_test

import (
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/testing/entratest"
)

func TestUsage_CallersMonth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.do(http.MethodGet, "/api/v1/usage?month=2026-11", e.keys["contoso"], nil)
	e.expect(res, http.StatusOK, "")
	checks := map[string]any{
		"tenant": "contoso", "month": "2026-11", "from": "2026-11-01T00:00:00Z", "to": "2026-12-01T00:00:00Z",
		"total.prompt_tokens": 151000.0, "total.completion_tokens": 30200.0, "total.total_tokens": 181200.0, "total.requests": 3.0,
		// queue: 1000 × 0.15 + 200 × 0.60 per 1M; batch: 150,000 × 0.075 + 30,000 × 0.30 per 1M
		"total.estimated_cost_usd": 0.000270 + 0.020250, "ledger_rows": 3.0, "budget": nil,
	}
	for path, want := range checks {
		if got := field(res.json, path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	lines, _ := res.json["lines"].([]any)
	if len(lines) != 2 {
		t.Fatalf("lines = %v", res.json["lines"])
	}
	first := lines[0].(map[string]any)
	if first["path"] != "batch" || first["alias"] != "summarize" || first["deployment"] != "gpt-4o-mini-batch" || first["prompt_tokens"] != 150000.0 {
		t.Errorf("first line = %v", first)
	}
	paths, _ := res.json["paths"].([]any)
	if len(paths) != 2 || field(paths[1], "path") != "queue" || field(paths[1], "prompt_tokens") != 1000.0 {
		t.Errorf("paths = %v", res.json["paths"])
	}

	// No month: the current one (UTC).
	if res := e.do(http.MethodGet, "/api/v1/usage", e.keys["contoso"], nil); res.status != http.StatusOK || res.json["month"] != "2026-11" {
		t.Errorf("default month: %d %v", res.status, res.json["month"])
	}
	// A budget shows how much is used.
	res = e.do(http.MethodGet, "/api/v1/usage?month=2026-11", e.keys["acme"], nil)
	if field(res.json, "budget.monthly_tokens") != 1e6 || field(res.json, "budget.used_tokens") != 777777.0 || field(res.json, "budget.remaining_tokens") != 222223.0 {
		t.Errorf("acme budget = %v", res.json["budget"])
	}
	// An Entra ID token of contoso's application reads the same.
	token := e.signer.Token(t, entratest.Claims(appContoso, now), nil)
	if res := e.do(http.MethodGet, "/api/v1/usage?month=2026-11", token, nil); res.status != http.StatusOK || field(res.json, "total.prompt_tokens") != 151000.0 {
		t.Errorf("with an Entra token: %d %s", res.status, res.body)
	}
}

func TestUsage_EmptyMonthsAndTenantsWithoutUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fresh := e.create("fresh", 0)
	for _, c := range []struct{ key, month string }{{e.keys["contoso"], "2026-10"}, {e.keys["contoso"], "2030-01"}, {fresh, "2026-11"}} {
		res := e.do(http.MethodGet, "/api/v1/usage?month="+c.month, c.key, nil)
		e.expect(res, http.StatusOK, "")
		if lines, ok := res.json["lines"].([]any); !ok || len(lines) != 0 || field(res.json, "total.total_tokens") != 0.0 || field(res.json, "total.estimated_cost_usd") != 0.0 {
			t.Errorf("month %s: %s", c.month, res.body)
		}
		res = e.do(http.MethodGet, "/api/v1/usage/export?month="+c.month, c.key, nil)
		if res.status != http.StatusOK || strings.Count(string(res.body), "\n") != 1 {
			t.Errorf("empty export %s: %d %q", c.month, res.status, res.body)
		}
	}
}

func TestUsage_MonthBoundariesAreUTC(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ny := time.FixedZone("EST", -5*3600)
	tokyo := time.FixedZone("JST", 9*3600)
	at := map[string]time.Time{
		"ny-evening":   time.Date(2026, 11, 30, 20, 0, 0, 0, ny),           // 01:00 UTC, 1 December
		"utc-last":     time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC),   // November
		"tokyo-dawn":   time.Date(2026, 12, 1, 8, 0, 0, 0, tokyo),          // 23:00 UTC, 30 November
		"utc-new-year": time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),        // January
		"utc-eve":      time.Date(2026, 12, 31, 23, 59, 59, 999, time.UTC), // December
	}
	for unit, when := range at {
		en := entry("fresh", "2026-11", ledger.Queue, "summarize", "gpt-4o-mini", unit, 1, 0)
		en.Month = ledger.MonthOf(when)
		e.record(en)
	}
	key := e.create("fresh", 0)
	for month, want := range map[string]float64{"2026-11": 2, "2026-12": 2, "2027-01": 1} {
		res := e.do(http.MethodGet, "/api/v1/usage?month="+month, key, nil)
		if got := field(res.json, "total.prompt_tokens"); got != want {
			t.Errorf("%s: prompt tokens %v, want %v", month, got, want)
		}
	}
}

func TestUsage_ExportCSV(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.do(http.MethodGet, "/api/v1/usage/export?month=2026-11", e.keys["contoso"], nil)
	e.expect(res, http.StatusOK, "")
	if ct := res.header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	if cd := res.header.Get("Content-Disposition"); cd != `attachment; filename="usage-contoso-2026-11.csv"` {
		t.Errorf("Content-Disposition = %q", cd)
	}
	rows, err := csv.NewReader(strings.NewReader(string(res.body))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"tenant", "month", "path", "alias", "deployment", "prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens", "total_tokens", "requests", "refusals", "estimated_cost_usd", "completed_tokens", "abandoned_tokens"},
		{"contoso", "2026-11", "batch", "summarize", "gpt-4o-mini-batch", "150000", "30000", "0", "0", "180000", "2", "0", "0.020250", "180000", "0"},
		{"contoso", "2026-11", "queue", "summarize", "gpt-4o-mini", "1000", "200", "0", "0", "1200", "1", "0", "0.000270", "1200", "0"},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %v", rows)
	}
	for i := range want {
		if strings.Join(rows[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("row %d = %v\n want %v", i, rows[i], want[i])
		}
	}
}
