package openaiapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/apptest"
)

// createWith creates a batch of file with the given metadata.
func createWith(c openai.Client, fileID string, md map[string]string) (*openai.Batch, error) {
	return c.Batches.New(context.Background(), openai.BatchNewParams{InputFileID: fileID,
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h, Metadata: md})
}

// storedJob is the control plane's job behind a batch.
func storedJob(t testing.TB, s *apptest.Stack, tenant, batchID string) batch.Job {
	t.Helper()
	j, err := s.Jobs.Get(context.Background(), tenant, strings.TrimPrefix(batchID, "batch_"))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestOpenAIGo_PackedReadsAsAlone: with packing on, two tenants' small
// batches created through the door share one Azure batch, and a third,
// the same requests as the first with metadata urgent "true", runs alone.
// Each packed batch reads through the official client exactly as the one
// that ran alone: its status and counts, its output lines (the caller's
// custom_ids, each once, the same answers and usage), an empty error
// file, and the ledger holds its usage under its own tenant.
func TestOpenAIGo_PackedReadsAsAlone(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	speed := 20000.0
	s := apptest.Start(t, apptest.Config{Sim: aoaisim.Config{Deployments: aoaisim.DefaultDeployments(), Speed: &speed},
		Settings: map[string]string{"OFFPATH_BATCH_PACK_MAX_ITEMS": "50", "OFFPATH_BATCH_PACK_TARGET_LINES": "100", "OFFPATH_BATCH_PACK_WINDOW": "2s"}})
	const n = 20
	type run struct {
		tenant, prefix string
		md             map[string]string
		b              *openai.Batch
	}
	runs := []*run{
		{tenant: "contoso", prefix: "c", md: map[string]string{"team": "support"}},
		{tenant: "fabrikam", prefix: "f", md: nil},
		{tenant: "contoso", prefix: "c", md: map[string]string{"team": "support", "urgent": "true"}},
	}
	for i, r := range runs {
		c := v1Client(s, r.tenant)
		f, err := upload(t, c, fmt.Sprintf("tickets-%d.jsonl", i), jsonl(t, r.prefix, n, nil))
		if err != nil {
			t.Fatalf("upload: %v", describe(err))
		}
		if r.b, err = createWith(c, f.ID, r.md); err != nil {
			t.Fatalf("create: %v", describe(err))
		}
	}
	type answer struct {
		status             int
		finish             string
		prompt, completion int64
	}
	outputs := make([]map[string]answer, len(runs))
	for i, r := range runs {
		c := v1Client(s, r.tenant)
		b := await(t, c, r.b.ID, terminal)
		if b.Status != openai.BatchStatusCompleted || b.RequestCounts.Total != n || b.RequestCounts.Completed != n || b.RequestCounts.Failed != 0 {
			t.Fatalf("batch %d ended %s with %+v", i, b.Status, b.RequestCounts)
		}
		if strings.Contains(b.RawJSON(), batch.PackTenant) {
			t.Errorf("batch %d shows its pack: %s", i, b.RawJSON())
		}
		if want := r.md["urgent"]; b.Metadata["urgent"] != want {
			t.Errorf("batch %d metadata %v, want the caller's back", i, b.Metadata)
		}
		outputs[i] = map[string]answer{}
		var prompt, completion int64
		for _, l := range download(t, c, b.OutputFileID) {
			if l.Response == nil || !strings.HasPrefix(l.CustomID, r.prefix+"-") {
				t.Fatalf("batch %d: output line %+v", i, l)
			}
			if _, dup := outputs[i][l.CustomID]; dup {
				t.Errorf("batch %d: %s twice", i, l.CustomID)
			}
			a := answer{status: l.Response.StatusCode, prompt: l.Response.Body.Usage.PromptTokens, completion: l.Response.Body.Usage.CompletionTokens}
			if len(l.Response.Body.Choices) > 0 {
				a.finish = l.Response.Body.Choices[0].FinishReason
			}
			outputs[i][l.CustomID] = a
			prompt += a.prompt
			completion += a.completion
		}
		if len(outputs[i]) != n {
			t.Errorf("batch %d: %d answers, want %d", i, len(outputs[i]), n)
		}
		if errs := download(t, c, b.ErrorFileID); len(errs) != 0 {
			t.Errorf("batch %d: error file has %d lines, want none", i, len(errs))
		}
		rows, p, cpl := jobLedger(t, s, r.tenant, b.ID)
		if rows != 1 || p != prompt || cpl != completion {
			t.Errorf("batch %d: ledger %d rows %d/%d tokens, output %d/%d", i, rows, p, cpl, prompt, completion)
		}
	}
	packed := storedJob(t, s, "contoso", runs[0].b.ID).Parts[0].Pack
	if packed == "" || storedJob(t, s, "fabrikam", runs[1].b.ID).Parts[0].Pack != packed {
		t.Fatalf("the two small batches were not packed together (%q)", packed)
	}
	if alone := storedJob(t, s, "contoso", runs[2].b.ID).Parts[0].Pack; alone != "" {
		t.Fatalf("the urgent batch ran in pack %s", alone)
	}
	for id, a := range outputs[2] {
		if outputs[0][id] != a {
			t.Errorf("%s: packed %+v, alone %+v", id, outputs[0][id], a)
		}
	}
}

// TestOpenAIGo_CompleteByInMetadata: a deadline given as metadata
// complete_by is checked as the native API checks it (an RFC 3339 time
// at least an hour ahead; urgent true or false), with a clear 400 that
// creates nothing; a batch Azure keeps validating and that can no longer
// make its deadline falls back to the synchronous deployment, and its
// output file, read through the official client, has every request
// answered once, its error file none, and the ledger what the simulator
// served. The job has 1,000 requests because the deadline rule, on the
// handler's real clock, gives up at once only on a job that long (see
// the batch package's kill test): some 20 s of synchronous calls.
func TestOpenAIGo_CompleteByInMetadata(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	speed := 20000.0
	s := apptest.Start(t, apptest.Config{Sim: aoaisim.Config{Speed: &speed, Deployments: []aoaisim.Deployment{
		{Name: "gpt-4o-mini", Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeStandard},
		{Name: "gpt-4o-mini-batch", Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeGlobalBatch},
	}, Faults: []aoaisim.FaultRule{{Deployment: "gpt-4o-mini-batch", HoldValidating: aoaisim.Duration(48 * time.Hour)}}}})
	c := v1Client(s, "contoso")
	const n = 1000
	f, err := upload(t, c, "tickets.jsonl", jsonl(t, "t", n, nil))
	if err != nil {
		t.Fatalf("upload: %v", describe(err))
	}
	rfc := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
	for _, tc := range []struct {
		md   map[string]string
		code string
	}{
		{map[string]string{"complete_by": rfc(30 * time.Minute)}, "invalid_complete_by"},
		{map[string]string{"complete_by": rfc(8 * 24 * time.Hour)}, "invalid_complete_by"},
		{map[string]string{"complete_by": "tomorrow morning"}, "invalid_request"},
		{map[string]string{"urgent": "yes"}, "invalid_request"},
	} {
		_, err := createWith(c, f.ID, tc.md)
		if err == nil {
			t.Fatalf("metadata %v: created", tc.md)
		}
		if ae := apiError(t, err); ae.StatusCode != http.StatusBadRequest || ae.Code != tc.code || !strings.Contains(ae.Message, "complete_by") && !strings.Contains(ae.Message, "urgent") {
			t.Errorf("metadata %v: %d %s %q, want 400 %s naming the key", tc.md, ae.StatusCode, ae.Code, ae.Message, tc.code)
		}
	}
	if page, err := c.Batches.List(context.Background(), openai.BatchListParams{}); err != nil || len(page.Data) != 0 {
		t.Fatalf("refused creates left batches: %v %v", page, err)
	}
	by := time.Now().Add(batch.MinCompleteBy + time.Minute).UTC().Truncate(time.Second)
	b, err := createWith(c, f.ID, map[string]string{"complete_by": by.Format(time.RFC3339)})
	if err != nil {
		t.Fatalf("create: %v", describe(err))
	}
	if j := storedJob(t, s, "contoso", b.ID); !j.CompleteBy.Equal(by) {
		t.Fatalf("job due %v, want %v", j.CompleteBy, by)
	}
	b = await(t, c, b.ID, terminal)
	if b.Status != openai.BatchStatusCompleted || b.RequestCounts.Completed != n || b.RequestCounts.Failed != 0 {
		t.Fatalf("batch ended %s with %+v", b.Status, b.RequestCounts)
	}
	if p := storedJob(t, s, "contoso", b.ID).Parts[0]; p.Fallback == nil || p.Fallback.Items != n {
		t.Fatalf("part %+v, want every item from the fallback", p.Fallback)
	}
	seen := map[string]bool{}
	var prompt, completion int64
	for _, l := range download(t, c, b.OutputFileID) {
		if l.Response == nil || l.Response.StatusCode != http.StatusOK || seen[l.CustomID] || !strings.HasPrefix(l.CustomID, "t-") {
			t.Fatalf("output line %+v", l)
		}
		seen[l.CustomID] = true
		prompt += l.Response.Body.Usage.PromptTokens
		completion += l.Response.Body.Usage.CompletionTokens
	}
	if len(seen) != n {
		t.Errorf("%d answers in the output, want %d", len(seen), n)
	}
	if errs := download(t, c, b.ErrorFileID); len(errs) != 0 {
		t.Errorf("error file has %d lines, want none: %+v", len(errs), errs[0])
	}
	rows, p, cpl := jobLedger(t, s, "contoso", b.ID)
	var served aoaisim.DeploymentStats
	for _, d := range s.Sim.Stats().Deployments {
		if d.Name == "gpt-4o-mini" {
			served = d
		}
	}
	if rows != n || p != prompt || cpl != completion || served.PromptTokens != prompt || served.CompletionTokens != completion {
		t.Errorf("ledger %d rows %d/%d tokens; output %d/%d; simulator served %d/%d", rows, p, cpl, prompt, completion, served.PromptTokens, served.CompletionTokens)
	}
	r := usageReport(t, s, "contoso")
	if len(r.Lines) != 1 || r.Lines[0].Path != ledger.Queue {
		t.Errorf("usage report %+v, want the fallback's usage on the queue path", r.Lines)
	}
}
