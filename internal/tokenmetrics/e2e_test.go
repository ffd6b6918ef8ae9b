package tokenmetrics_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/devhost"
	"github.com/offpath/offpath/internal/testing/apptest"
)

// TestE2E_WorkerMetrics runs the real handler as the AKS workers run it: a
// host restricted to ingest-process-heavy (so no batch-poll tick ever runs
// there) with OFFPATH_METRICS_ADDR set. The Function App's part is played
// by the test: it writes batch jobs to the job table and sends claim
// checks to the heavy queue. The worker's /metrics then shows the
// documents by outcome, the jobs by state (read from the table), and
// tokens equal to both the ledger and what the simulator served.
func TestE2E_WorkerMetrics(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ln.Addr().String()
	ln.Close()
	s := apptest.Start(t, apptest.Config{
		Tenants: map[string][]string{"contoso": {"ingest"}, "fabrikam": {"ingest"}},
		Settings: map[string]string{
			"AzureFunctionsJobHost__functions__0": "ingest-process-heavy",
			"OFFPATH_METRICS_ADDR":                metricsAddr,
		},
	})
	ctx := context.Background()

	// The control plane's jobs, as the Function App wrote them.
	now := time.Now().UTC()
	for i, j := range []struct {
		tenant string
		state  batch.State
	}{{"contoso", batch.Held}, {"contoso", batch.Held}, {"fabrikam", batch.Submitted}, {"contoso", batch.Harvested}} {
		id, err := batch.NewJobID(now.Add(time.Duration(i)*time.Millisecond), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Jobs.Create(ctx, batch.Job{ID: id, Tenant: j.tenant, Alias: "summarize", State: j.state, Created: now, Updated: now, Items: 1}, ""); err != nil {
			t.Fatal(err)
		}
	}

	// The documents, and their claim checks on the heavy queue.
	docs := map[string]string{
		"contoso/runbook.txt": strings.Repeat("The printer on floor three jams when the tray is overfilled. ", 40),
		"contoso/outage.txt":  strings.Repeat("The VPN concentrator rebooted twice during the night shift. ", 30),
		"fabrikam/faq.txt":    strings.Repeat("Password resets go through the self-service portal first. ", 25),
		"contoso/refused.txt": "Please summarise: " + aoaisim.DefaultPromptTrigger,
		"nobody/orphan.txt":   "A claim check for a tenant that does not exist.",
	}
	if _, err := s.Blobs.CreateContainer(ctx, "incoming", nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		t.Fatal(err)
	}
	for name, text := range docs {
		res, err := s.Blobs.UploadBuffer(ctx, "incoming", name, []byte(text), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(claimcheck.Message{Version: claimcheck.Version,
			BlobURL: strings.TrimRight(s.Blobs.URL(), "/") + "/incoming/" + name, ETag: strings.Trim(string(*res.ETag), `"`),
			Size: int64(len(text)), ContentType: "text/plain", Tenant: strings.Split(name, "/")[0], ModelAlias: "ingest",
			CorrelationID: "e2e-" + strings.ReplaceAll(name, "/", "-")})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/devhost/servicebus/doc-ingest-heavy", bytes.NewReader(body))
		req.Header.Set("x-functions-key", apptest.MasterKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("send the claim check of %s: %d", name, resp.StatusCode)
		}
	}
	settled := map[string]bool{}
	s.Wait("every claim check settled", func(e devhost.Event) bool {
		if e.Kind == devhost.Settled && e.Queue == "doc-ingest-heavy" && e.Outcome == "completed" {
			settled[e.MessageID] = true
		}
		return len(settled) == len(docs)
	})

	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	samples, types := parseExposition(t, string(body))
	if types["offpath_batch_jobs"] != "gauge" || types["offpath_documents_total"] != "counter" {
		t.Fatalf("families: %v\n%s", types, body)
	}
	for series, want := range map[string]int64{
		`offpath_documents_total{tenant="contoso",outcome="done"}`:           2,
		`offpath_documents_total{tenant="fabrikam",outcome="done"}`:          1,
		`offpath_documents_total{tenant="contoso",outcome="refused"}`:        1,
		`offpath_documents_total{tenant="_unattributed",outcome="rejected"}`: 1,
		`offpath_batch_jobs{state="held"}`:                                   2,
		`offpath_batch_jobs{state="submitted"}`:                              1,
		`offpath_batch_jobs{state="harvested"}`:                              1,
		`offpath_batch_jobs{state="accepted"}`:                               0,
	} {
		if got, ok := samples[series]; !ok || got != want {
			t.Errorf("%s = %d (present %v), want %d", series, got, ok, want)
		}
	}

	// Tokens: /metrics per deployment and kind = the ledger = the simulator.
	scraped := map[string][2]int64{}
	for series, v := range samples {
		name, labels, _ := strings.Cut(series, "{")
		if name != "offpath_tokens_total" && name != "offpath_tokens_corrected_total" {
			continue
		}
		if name == "offpath_tokens_corrected_total" {
			v = -v
		}
		dep := labelValue(labels, "deployment")
		k := scraped[dep]
		if labelValue(labels, "kind") == "prompt" {
			k[0] += v
		} else {
			k[1] += v
		}
		scraped[dep] = k
	}
	metered := map[string][2]int64{}
	for _, tn := range []string{"contoso", "fabrikam"} {
		rows, err := s.Ledger.Month(ctx, tn, ledger.MonthOf(time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range rows {
			m := metered[e.Deployment]
			metered[e.Deployment] = [2]int64{m[0] + e.PromptTokens, m[1] + e.CompletionTokens}
		}
	}
	served := map[string][2]int64{}
	for _, d := range s.Sim.Stats().Deployments {
		if d.PromptTokens+d.CompletionTokens > 0 {
			served[d.Name] = [2]int64{d.PromptTokens, d.CompletionTokens}
		}
	}
	if len(served) == 0 || fmt.Sprint(scraped) != fmt.Sprint(metered) || fmt.Sprint(metered) != fmt.Sprint(served) {
		t.Errorf("tokens (prompt, completion) per deployment: /metrics %v, ledger %v, simulator served %v", scraped, metered, served)
	}
	t.Logf("tokens per deployment (prompt, completion): simulator served %v, ledger %v, /metrics %v", served, metered, scraped)
}

// labelValue is a label's value in a series' label text (values here have
// no escapes).
func labelValue(labels, name string) string {
	for _, pair := range strings.Split(strings.TrimSuffix(labels, "}"), ",") {
		if k, v, ok := strings.Cut(pair, "="); ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
