package tokenmetrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/outcome"
	"github.com/offpath/offpath/internal/tokenmetrics"
)

func TestPrometheus_TextFormat(t *testing.T) {
	t.Parallel()
	p := tokenmetrics.NewPrometheus()
	ctx := context.Background()
	p.Emit(ctx, []ledger.Sample{
		{Tenant: "contoso", Alias: "summarize", Deployment: "chat", Path: ledger.Queue, PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120},
		{Tenant: "contoso", Alias: "summarize", Deployment: "chat", Path: ledger.Queue, PromptTokens: 50, CompletionTokens: 5, TotalTokens: 55},
		{Tenant: `we"ird\`, Alias: "a", Deployment: "batch", Path: ledger.Batch, PromptTokens: -30, TotalTokens: -30},
	})
	srv := httptest.NewServer(p)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type = %q", ct)
	}
	for _, want := range []string{
		"# TYPE offpath_tokens_total counter\n",
		`offpath_tokens_total{tenant="contoso",alias="summarize",deployment="chat",path="queue",kind="prompt"} 150` + "\n",
		`offpath_tokens_total{tenant="contoso",alias="summarize",deployment="chat",path="queue",kind="completion"} 25` + "\n",
		`offpath_tokens_corrected_total{tenant="we\"ird\\",alias="a",deployment="batch",path="batch",kind="prompt"} 30` + "\n",
		`offpath_tokens_total{tenant="we\"ird\\",alias="a",deployment="batch",path="batch",kind="completion"} 0` + "\n",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("missing %q in\n%s", want, body)
		}
	}
	parseExposition(t, string(body))
	if strings.Contains(string(body), " -") {
		t.Errorf("a counter went negative:\n%s", body)
	}
	resp, err = http.Post(srv.URL+"/metrics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d", resp.StatusCode)
	}
}

// sampleLine is one sample of the text exposition format: a metric name,
// labels of quoted, escaped values, and an integer value.
var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\} (-?[0-9]+)$`)

// parseExposition checks every line of body against the text format and
// returns the samples by their full series text (name and labels).
func parseExposition(t *testing.T, body string) (samples map[string]int64, types map[string]string) {
	t.Helper()
	samples, types = map[string]int64{}, map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
			continue
		} else if len(f) >= 3 && f[0] == "#" && f[1] == "HELP" {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a sample line of the text format: %q", line)
		}
		if _, ok := types[m[1]]; !ok {
			t.Errorf("sample %q before its TYPE", line)
		}
		v, _ := strconv.ParseInt(m[3], 10, 64)
		samples[m[1]+"{"+m[2]+"}"] = v
	}
	return samples, types
}

func TestPrometheus_DocumentsAndBatchJobs(t *testing.T) {
	t.Parallel()
	p := tokenmetrics.NewPrometheus()
	p.Settled("contoso", outcome.Done)
	p.Settled("contoso", outcome.Done)
	p.Settled("contoso", outcome.Transient)
	p.Settled("_unattributed", outcome.Rejected)
	p.SetBatchJobs(map[string]int{"running": 3, "held": 1})
	p.SetBatchJobs(map[string]int{"running": 2, "harvested": 1}) // held emptied
	p.Emit(context.Background(), []ledger.Sample{{Tenant: "contoso", Alias: "a", Deployment: "d", Path: ledger.Queue, PromptTokens: 7}})

	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	samples, types := parseExposition(t, rec.Body.String())
	for name, typ := range map[string]string{"offpath_documents_total": "counter", "offpath_batch_jobs": "gauge", "offpath_tokens_total": "counter"} {
		if types[name] != typ {
			t.Errorf("TYPE of %s = %q, want %s", name, types[name], typ)
		}
	}
	for series, want := range map[string]int64{
		`offpath_documents_total{tenant="contoso",outcome="done"}`:                                   2,
		`offpath_documents_total{tenant="contoso",outcome="transient"}`:                              1,
		`offpath_documents_total{tenant="_unattributed",outcome="rejected"}`:                         1,
		`offpath_batch_jobs{state="running"}`:                                                        2,
		`offpath_batch_jobs{state="held"}`:                                                           0,
		`offpath_batch_jobs{state="harvested"}`:                                                      1,
		`offpath_tokens_total{tenant="contoso",alias="a",deployment="d",path="queue",kind="prompt"}`: 7,
	} {
		if got, ok := samples[series]; !ok || got != want {
			t.Errorf("%s = %d (present %v), want %d\n%s", series, got, ok, want, rec.Body.String())
		}
	}
}
