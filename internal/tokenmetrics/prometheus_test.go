package tokenmetrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/ledger"
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
