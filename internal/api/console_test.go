package api_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/audit"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/object"
)

// heldJobs is the API's HeldJobs with a fixed answer.
type heldJobs struct {
	mu   sync.Mutex
	jobs []batch.Job
	err  error
}

func (h *heldJobs) Held(context.Context) ([]batch.Job, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.jobs), h.err
}

// reports is the API's Reports over days in memory: each day's Markdown,
// and its HTML as "<html>" + Markdown.
type reports struct {
	mu   sync.Mutex
	days map[string]string
}

func (r *reports) ReportDays(context.Context) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for d := range r.days {
		out = append(out, d)
	}
	slices.Sort(out)
	return out, nil
}

func (r *reports) OpenReport(_ context.Context, day string, markdown bool) (io.ReadCloser, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	md, ok := r.days[day]
	if !ok {
		return nil, object.ErrNotFound
	}
	if !markdown {
		md = "<html>" + md
	}
	return io.NopCloser(strings.NewReader(md)), nil
}

// TestConsoleRoutes_Unauthorised: no credential is 401 on every new route;
// a tenant's is 403 on the operator's; the admin's reads them.
func TestConsoleRoutes_Unauthorised(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.reports.days["2026-11-16"] = "# report"
	for _, target := range []string{"/api/v1/whoami", "/api/v1/usage/daily", "/api/v1/alerts", "/api/v1/held-jobs", "/api/v1/audit",
		"/api/v1/reports", "/api/v1/reports/2026-11-16", "/api/v1/reports/2026-11-16?format=html"} {
		e.expect(e.do("GET", target, "", nil), http.StatusUnauthorized, "unauthenticated")
		e.expect(e.do("GET", target, "opk_bogus.bogus", nil), http.StatusUnauthorized, "unauthenticated")
		e.expect(e.do("POST", target, e.admin, nil), http.StatusMethodNotAllowed, "method_not_allowed")
		if target == "/api/v1/whoami" || target == "/api/v1/usage/daily" {
			continue
		}
		e.expect(e.do("GET", target, e.keys["contoso"], nil), http.StatusForbidden, "forbidden")
		if res := e.do("GET", target, e.admin, nil); res.status != http.StatusOK {
			t.Errorf("admin GET %s: %d %s", target, res.status, res.body)
		}
	}
}

// TestWhoami says who a credential is, and nothing more.
func TestWhoami(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.do("GET", "/api/v1/whoami", e.keys["contoso"], nil)
	e.expect(res, http.StatusOK, "")
	if res.json["tenant"] != "contoso" || res.json["admin"] != false || res.json["display_name"] != "Team contoso" || res.json["auth"] != "api_key" {
		t.Errorf("tenant whoami = %s", res.body)
	}
	res = e.do("GET", "/api/v1/whoami", e.admin, nil)
	e.expect(res, http.StatusOK, "")
	if res.json["admin"] != true || res.json["tenant"] != nil {
		t.Errorf("admin whoami = %s", res.body)
	}
	e.expect(e.do("GET", "/api/v1/whoami?tenant=acme", e.keys["contoso"], nil), http.StatusBadRequest, "unknown_parameter")
}

// TestUsageDaily: the days add up to the month's report, by path, alias
// and deployment; a tenant reads only its own; bad input is refused.
func TestUsageDaily(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	daily := e.do("GET", "/api/v1/usage/daily?month=2026-11", e.keys["contoso"], nil)
	e.expect(daily, http.StatusOK, "")
	month := e.do("GET", "/api/v1/usage?month=2026-11", e.keys["contoso"], nil)
	days, _ := daily.json["days"].([]any)
	if len(days) != 1 || field(days[0].(map[string]any), "day") != now.Format(time.DateOnly) {
		t.Fatalf("days = %s, want one: the ledger's rows were all written %s", daily.body, now.Format(time.DateOnly))
	}
	var sum float64
	for _, l := range days[0].(map[string]any)["lines"].([]any) {
		sum += l.(map[string]any)["total_tokens"].(float64)
	}
	if want := field(month.json, "total.total_tokens"); sum != want || field(daily.json, "total.total_tokens") != want {
		t.Errorf("the days' lines sum to %v, the month's total is %v (daily total %v)", sum, want, field(daily.json, "total.total_tokens"))
	}
	if strings.Contains(string(daily.body), "acme") || strings.Contains(string(daily.body), "777777") {
		t.Errorf("contoso's daily usage shows acme's: %s", daily.body)
	}
	admin := e.do("GET", "/api/v1/usage/daily?month=2026-11&tenant=acme", e.admin, nil)
	e.expect(admin, http.StatusOK, "")
	if field(admin.json, "total.total_tokens") != float64(777_777) {
		t.Errorf("admin's view of acme: %s", admin.body)
	}
	for _, c := range []struct {
		target, cred string
		status       int
		code         string
	}{
		{"/api/v1/usage/daily?tenant=acme", e.keys["contoso"], http.StatusForbidden, "forbidden"},
		{"/api/v1/usage/daily?tenant=acme%27%20or%20%27%27%3D%27", e.keys["contoso"], http.StatusForbidden, "forbidden"},
		{"/api/v1/usage/daily?tenant=contoso&tenant=acme", e.keys["contoso"], http.StatusBadRequest, "bad_query"},
		{"/api/v1/usage/daily?month=2026-13", e.keys["contoso"], http.StatusBadRequest, "invalid_month"},
		{"/api/v1/usage/daily?month=%00", e.keys["contoso"], http.StatusBadRequest, "invalid_month"},
		{"/api/v1/usage/daily?day=1", e.keys["contoso"], http.StatusBadRequest, "unknown_parameter"},
		{"/api/v1/usage/daily?x=" + strings.Repeat("a", 3000), e.keys["contoso"], http.StatusRequestURITooLong, "query_too_long"},
		{"/api/v1/usage/daily", e.admin, http.StatusBadRequest, "tenant_required"},
		{"/api/v1/usage/daily?tenant=No%20Such", e.admin, http.StatusBadRequest, "invalid_tenant_id"},
		{"/api/v1/usage/daily?tenant=nobody", e.admin, http.StatusNotFound, "not_found"},
	} {
		e.expect(e.do("GET", c.target, c.cred, nil), c.status, c.code)
	}
}

// TestAlerts lists the record newest first, a page at a time, as it was
// raised (hostile text stays data), and refuses malformed paging.
func TestAlerts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.do("GET", "/api/v1/alerts", e.admin, nil)
	e.expect(res, http.StatusOK, "")
	if list, _ := res.json["alerts"].([]any); list == nil || len(list) != 0 {
		t.Errorf("no alert raised: %s, want an empty list", res.body)
	}
	hostile := `"><img src=x onerror=alert(1)> ' or ''='`
	sender := alert.New("", nil, e.alerts)
	ctx := context.Background()
	sender.Raise(ctx, alert.Alert{Name: "batch_failed", Tenant: "contoso", Job: "j1", Message: hostile, At: now.Add(-time.Hour)})
	sender.Raise(ctx, alert.Alert{Name: "second_door", Message: "a batch offpath did not create", Fields: map[string]any{"batch_id": "batch_1"}, At: now})
	res = e.do("GET", "/api/v1/alerts?limit=1", e.admin, nil)
	e.expect(res, http.StatusOK, "")
	list := res.json["alerts"].([]any)
	next, _ := res.json["next"].(string)
	if len(list) != 1 || field(list[0].(map[string]any), "alert") != "second_door" || field(list[0].(map[string]any), "fields.batch_id") != "batch_1" || next == "" {
		t.Fatalf("first page = %s", res.body)
	}
	res = e.do("GET", "/api/v1/alerts?limit=1&cursor="+next, e.admin, nil)
	e.expect(res, http.StatusOK, "")
	list = res.json["alerts"].([]any)
	if len(list) != 1 || field(list[0].(map[string]any), "message") != hostile || field(list[0].(map[string]any), "tenant") != "contoso" {
		t.Fatalf("second page = %s", res.body)
	}
	for _, q := range []string{"limit=0", "limit=501", "limit=x", "limit=1&limit=2", "cursor=abc", "cursor=1'%20or%20''%3D'", "tenant=contoso"} {
		res := e.do("GET", "/api/v1/alerts?"+q, e.admin, nil)
		if res.status != http.StatusBadRequest {
			t.Errorf("?%s: %d %s, want 400", q, res.status, res.body)
		}
	}
}

// TestHeldJobs shows every tenant's held jobs with why, to the admin only.
func TestHeldJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.held.jobs = []batch.Job{{ID: "j1", Tenant: "contoso", State: batch.Held, Alias: "summarize", Items: 3, Created: now,
		Parts: []batch.Part{{Index: 0, Deployment: "gpt-4o-mini-batch", Status: batch.PartPending, HeldReason: "quota", HeldSince: now, Attempt: 2, EstimatedTokens: 900},
			{Index: 1, Status: batch.PartSubmitted}}}}
	res := e.do("GET", "/api/v1/held-jobs", e.admin, nil)
	e.expect(res, http.StatusOK, "")
	jobs := res.json["jobs"].([]any)
	if len(jobs) != 1 || field(jobs[0].(map[string]any), "tenant") != "contoso" {
		t.Fatalf("held jobs = %s", res.body)
	}
	parts := jobs[0].(map[string]any)["held_parts"].([]any)
	if len(parts) != 1 || field(parts[0].(map[string]any), "held_reason") != "quota" || field(parts[0].(map[string]any), "attempt") != float64(2) {
		t.Errorf("held parts = %v", parts)
	}
	e.expect(e.do("GET", "/api/v1/held-jobs?tenant=contoso", e.admin, nil), http.StatusBadRequest, "unknown_parameter")
	e.held.mu.Lock()
	e.held.err = errors.New("table down")
	e.held.mu.Unlock()
	e.expect(e.do("GET", "/api/v1/held-jobs", e.admin, nil), http.StatusServiceUnavailable, "unavailable")
}

// TestAuditFindings lists the second door's records, newest alert first.
func TestAuditFindings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if err := e.findings.Put(ctx, audit.Record{Kind: audit.KindBatch, ID: "batch_old", AlertedAt: now.Add(-time.Hour), Status: "completed",
		BookedAt: now, Tenant: "unattributed", Usage: ledger.Usage{PromptTokens: 10, CompletionTokens: 5}}); err != nil {
		t.Fatal(err)
	}
	if err := e.findings.Put(ctx, audit.Record{Kind: audit.KindFile, ID: "file-new", AlertedAt: now, Filename: "<script>.jsonl", Bytes: 12}); err != nil {
		t.Fatal(err)
	}
	res := e.do("GET", "/api/v1/audit", e.admin, nil)
	e.expect(res, http.StatusOK, "")
	f := res.json["findings"].([]any)
	if len(f) != 2 || field(f[0].(map[string]any), "id") != "file-new" || field(f[0].(map[string]any), "filename") != "<script>.jsonl" ||
		field(f[1].(map[string]any), "usage.total_tokens") != float64(15) {
		t.Errorf("findings = %s", res.body)
	}
	e.expect(e.do("GET", "/api/v1/audit?kind=batch", e.admin, nil), http.StatusBadRequest, "unknown_parameter")
}

// TestMorningReports: the index newest first; a day's report with its
// previous and next; the HTML as a sandboxed download; bad days refused.
func TestMorningReports(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, d := range []string{"2026-11-14", "2026-11-15", "2026-11-16"} {
		e.reports.days[d] = "# Morning report " + d
	}
	res := e.do("GET", "/api/v1/reports", e.admin, nil)
	e.expect(res, http.StatusOK, "")
	if got := res.json["days"].([]any); len(got) != 3 || got[0] != "2026-11-16" {
		t.Errorf("index = %s, want newest first", res.body)
	}
	for day, want := range map[string][2]any{"2026-11-14": {nil, "2026-11-15"}, "2026-11-15": {"2026-11-14", "2026-11-16"}, "2026-11-16": {"2026-11-15", nil}} {
		res := e.do("GET", "/api/v1/reports/"+day, e.admin, nil)
		e.expect(res, http.StatusOK, "")
		if res.json["prev"] != want[0] || res.json["next"] != want[1] || res.json["markdown"] != "# Morning report "+day {
			t.Errorf("%s: %s, want prev %v next %v", day, res.body, want[0], want[1])
		}
	}
	html := e.do("GET", "/api/v1/reports/2026-11-15?format=html", e.admin, nil)
	e.expect(html, http.StatusOK, "")
	if !strings.HasPrefix(string(html.body), "<html>") || !strings.HasPrefix(html.header.Get("Content-Security-Policy"), "sandbox") ||
		!strings.HasPrefix(html.header.Get("Content-Disposition"), "attachment") {
		t.Errorf("HTML answer: %v %q", html.header, html.body)
	}
	for _, c := range []struct {
		target string
		status int
		code   string
	}{
		{"/api/v1/reports/2026-11-13", http.StatusNotFound, "not_found"},
		{"/api/v1/reports/2026-02-30", http.StatusBadRequest, "invalid_day"},
		{"/api/v1/reports/2026-1-5", http.StatusBadRequest, "invalid_day"},
		{"/api/v1/reports/..%2F..%2Fsecret", http.StatusBadRequest, "invalid_day"},
		{"/api/v1/reports/2026-11-15%00", http.StatusBadRequest, "invalid_day"},
		{"/api/v1/reports/2026-11-15?format=pdf", http.StatusBadRequest, "invalid_format"},
		{"/api/v1/reports/2026-11-15?format=html&format=json", http.StatusBadRequest, "bad_query"},
	} {
		e.expect(e.do("GET", c.target, e.admin, nil), c.status, c.code)
	}
}

// TestConsolePage: one self-contained page whose policy allows exactly its
// own inline script and style, at /api/v1/console/ only.
func TestConsolePage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.do("GET", "/api/v1/console/", "", nil)
	if res.status != http.StatusOK || !strings.HasPrefix(res.header.Get("Content-Type"), "text/html") {
		t.Fatalf("console: %d %v", res.status, res.header)
	}
	csp := res.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'sha256-", "style-src 'sha256-", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	// The SVG namespace is a name, not a request.
	body := strings.ReplaceAll(string(res.body), `"http://www.w3.org/2000/svg"`, "")
	if strings.Contains(csp, "unsafe") || strings.Contains(body, "http://") || strings.Contains(body, "https://") || strings.Contains(body, " src=") ||
		strings.Count(body, "<script") != 1 || strings.Contains(body, "/*SCRIPT*/") {
		t.Errorf("the page loads something from elsewhere or lost its script")
	}
	redirect := e.do("GET", "/api/v1/console?code=k", "", nil)
	if redirect.status != http.StatusMovedPermanently || redirect.header.Get("Location") != "/api/v1/console/?code=k" {
		t.Errorf("/api/v1/console: %d %v", redirect.status, redirect.header)
	}
	e.expect(e.do("GET", "/api/v1/console/other.js", "", nil), http.StatusNotFound, "not_found")
	if res := e.do("POST", "/api/v1/console/", "", nil); res.status != http.StatusMethodNotAllowed {
		t.Errorf("POST console: %d", res.status)
	}
}
