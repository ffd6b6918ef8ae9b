package openaiapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/apptest"
)

// fastStack runs the app with a simulator fast enough that a 1,000-line
// batch ends in well under a second of its clock.
func fastStack(t *testing.T) *apptest.Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	speed := 20000.0
	return apptest.Start(t, apptest.Config{Sim: aoaisim.Config{Deployments: aoaisim.DefaultDeployments(), Speed: &speed},
		Tenants: map[string][]string{"contoso": {"summarize", "extract"}, "fabrikam": {"summarize"}}})
}

// TestOpenAIGo_ThousandRequests: the official openai-go client, pointed at
// the door's v1 surface, uploads 1,000 requests, creates the batch, polls
// it to completed, and downloads the output: every custom_id comes back
// once with its usage, and the tenant's usage report holds exactly that.
func TestOpenAIGo_ThousandRequests(t *testing.T) {
	t.Parallel()
	s := fastStack(t)
	c := v1Client(s, "contoso")
	f, err := upload(t, c, "tickets.jsonl", jsonl(t, "t", 1000, nil))
	if err != nil {
		t.Fatalf("upload: %v", describe(err))
	}
	if f.Status != "processed" || f.Purpose != "batch" || f.Bytes == 0 {
		t.Errorf("file %+v", f)
	}
	b := create(t, c, f.ID)
	if b.InputFileID != f.ID || b.RequestCounts.Total != 1000 || b.Metadata["team"] != "support" || !strings.Contains(b.Metadata["offpath"], `"alias":"summarize"`) {
		t.Errorf("created batch %+v", b)
	}
	b = await(t, c, b.ID, terminal)
	if b.Status != openai.BatchStatusCompleted || b.RequestCounts.Completed != 1000 || b.RequestCounts.Failed != 0 || b.OutputFileID == "" {
		t.Fatalf("batch ended %s with %+v, output %q", b.Status, b.RequestCounts, b.OutputFileID)
	}
	lines := download(t, c, b.OutputFileID)
	seen := map[string]bool{}
	var prompt, completion int64
	for _, l := range lines {
		if l.Response == nil || l.Response.StatusCode != 200 || seen[l.CustomID] || !strings.HasPrefix(l.CustomID, "t-") {
			t.Errorf("output line %+v", l)
			continue
		}
		u := l.Response.Body.Usage
		if u.PromptTokens <= 0 || u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			t.Errorf("line %s usage %+v", l.CustomID, u)
		}
		seen[l.CustomID] = true
		prompt += u.PromptTokens
		completion += u.CompletionTokens
	}
	if len(seen) != 1000 {
		t.Errorf("%d custom_ids matched in %d lines, want 1000", len(seen), len(lines))
	}
	if errs := download(t, c, b.ErrorFileID); len(errs) != 0 {
		t.Errorf("error file has %d lines, want none", len(errs))
	}
	r := usageReport(t, s, "contoso")
	if r.Total.PromptTokens != prompt || r.Total.CompletionTokens != completion {
		t.Errorf("usage report %+v, want the output's %d prompt and %d completion tokens", r.Total, prompt, completion)
	}
	if rows, p, cpl := jobLedger(t, s, "contoso", b.ID); rows != 1 || p != prompt || cpl != completion {
		t.Errorf("ledger: %d rows, %d/%d tokens", rows, p, cpl)
	}
	// The output stays downloadable from offpath's copy: Azure's files are
	// deleted by the harvest.
	if n := len(s.Sim.State().Files); n != 0 {
		t.Logf("simulator still holds %d files", n)
	}
}

// TestAzureOpenAIGo_ClassicSurface: the Azure flavour of openai-go
// (azure.WithEndpoint, api-key, api-version) works unchanged against the
// classic routes, and the tenant's batches are its own.
func TestAzureOpenAIGo_ClassicSurface(t *testing.T) {
	t.Parallel()
	s := fastStack(t)
	c := classicClient(s, "contoso")
	f, err := upload(t, c, "small.jsonl", jsonl(t, "c", 20, nil))
	if err != nil {
		t.Fatalf("upload: %v", describe(err))
	}
	if got, err := c.Files.Get(context.Background(), f.ID); err != nil || got.Bytes != f.Bytes {
		t.Errorf("get file: %+v, %v", got, describe(err))
	}
	b := await(t, c, create(t, c, f.ID).ID, terminal)
	if b.Status != openai.BatchStatusCompleted || len(download(t, c, b.OutputFileID)) != 20 {
		t.Errorf("batch %s %+v", b.Status, b.RequestCounts)
	}

	// Another tenant sees none of it.
	other := classicClient(s, "fabrikam")
	for what, err := range map[string]error{
		"batch":   func() error { _, err := other.Batches.Get(context.Background(), b.ID); return err }(),
		"cancel":  func() error { _, err := other.Batches.Cancel(context.Background(), b.ID); return err }(),
		"file":    func() error { _, err := other.Files.Get(context.Background(), f.ID); return err }(),
		"output":  func() error { _, err := other.Files.Content(context.Background(), b.OutputFileID); return err }(),
		"content": func() error { _, err := other.Files.Content(context.Background(), f.ID); return err }(),
		"delete":  func() error { _, err := other.Files.Delete(context.Background(), f.ID); return err }(),
	} {
		if ae := apiError(t, err); ae.StatusCode != http.StatusNotFound {
			t.Errorf("fabrikam reading contoso's %s: %d, want 404", what, ae.StatusCode)
		}
	}
	if _, err := other.Batches.New(context.Background(), openai.BatchNewParams{InputFileID: f.ID,
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h}); err == nil {
		t.Error("fabrikam made a batch of contoso's file")
	}
	page, err := other.Batches.List(context.Background(), openai.BatchListParams{})
	if err != nil || len(page.Data) != 0 {
		t.Errorf("fabrikam's list: %d batches, %v", len(page.Data), describe(err))
	}
	// Keys and function keys as clients send them: the offpath key in
	// api-key on v1, the function key as the code query parameter.
	for name, alt := range map[string]openai.Client{
		"api-key on v1": openai.NewClient(option.WithBaseURL(s.URL+"/api/openai/v1/"), option.WithHeader("api-key", s.Keys["contoso"]),
			option.WithHeader("x-functions-key", apptest.FunctionKey)),
		"code query": openai.NewClient(option.WithBaseURL(s.URL+"/api/openai/v1/"), option.WithAPIKey(s.Keys["contoso"]),
			option.WithQuery("code", apptest.FunctionKey)),
	} {
		if got, err := alt.Batches.Get(context.Background(), b.ID); err != nil || got.ID != b.ID {
			t.Errorf("%s: %v", name, describe(err))
		}
	}
	noFunctionKey := openai.NewClient(option.WithBaseURL(s.URL+"/api/openai/v1/"), option.WithAPIKey(s.Keys["contoso"]), option.WithMaxRetries(0))
	if _, err := noFunctionKey.Batches.Get(context.Background(), b.ID); apiError(t, err).StatusCode != http.StatusUnauthorized {
		t.Errorf("without the function key: %v", describe(err))
	}
	if _, err := c.Files.Delete(context.Background(), f.ID); err != nil {
		t.Errorf("delete: %v", describe(err))
	}
	if _, err := c.Files.Get(context.Background(), f.ID); apiError(t, err).StatusCode != http.StatusNotFound {
		t.Errorf("deleted file still there")
	}
	// The batch's output outlives its input file.
	if len(download(t, c, b.OutputFileID)) != 20 {
		t.Error("output gone with the input file")
	}
}

// TestOpenAIGo_UploadRefusals: a file Azure would refuse is refused at
// upload, with Azure's code and the line; nothing is stored.
func TestOpenAIGo_UploadRefusals(t *testing.T) {
	t.Parallel()
	s := fastStack(t)
	c := v1Client(s, "contoso", option.WithMaxRetries(0))
	cases := []struct {
		name, code string
		line       int
		body       []byte
	}{
		{"model not allowed", "model_not_found", 3, jsonl(t, "m", 5, func(i int, l *inputLine) {
			if i == 2 {
				l.Body["model"] = "gpt-4o"
			}
		})},
		{"duplicate custom_id", "duplicate_custom_id", 4, jsonl(t, "d", 5, func(i int, l *inputLine) {
			if i == 3 {
				l.CustomID = "d-0001"
			}
		})},
		{"url mismatch", "url_mismatch", 2, jsonl(t, "u", 3, func(i int, l *inputLine) {
			if i == 1 {
				l.URL = "/chat/completions"
			}
		})},
		{"model mismatch", "model_mismatch", 2, jsonl(t, "mm", 3, func(i int, l *inputLine) {
			if i == 1 {
				l.Body["model"] = "extract"
			}
		})},
		{"invalid json", "invalid_json_line", 2, append(jsonl(t, "j", 1, nil), []byte("{not json\n")...)},
		{"blank line", "invalid_json_line", 2, append(jsonl(t, "b", 1, nil), append([]byte("\n"), jsonl(t, "b2", 1, nil)...)...)},
		{"empty", "empty_file", 0, []byte("\n")},
		{"byte-order mark", "invalid_json_line", 1, append([]byte("\xef\xbb\xbf"), jsonl(t, "bom", 1, nil)...)},
		{"unsupported parameter", "invalid_request", 1, jsonl(t, "p", 1, func(i int, l *inputLine) { l.Body["tools"] = []any{} })},
	}
	for _, tc := range cases {
		_, err := upload(t, c, tc.name+".jsonl", tc.body)
		if err == nil {
			t.Errorf("%s: uploaded", tc.name)
			continue
		}
		ae := apiError(t, err)
		wantLine := fmt.Sprintf("line %d:", tc.line)
		if ae.StatusCode != http.StatusBadRequest || ae.Code != tc.code || (tc.line > 0 && !strings.Contains(ae.Message, wantLine)) {
			t.Errorf("%s: %d %s %q, want 400 %s at %s", tc.name, ae.StatusCode, ae.Code, ae.Message, tc.code, wantLine)
		}
	}
	pager := c.Files.ListAutoPaging(context.Background(), openai.FileListParams{})
	for pager.Next() {
		t.Errorf("a refused upload left file %s", pager.Current().ID)
	}
	if err := pager.Err(); err != nil {
		t.Error(describe(err))
	}
	names, err := s.Blobs.NewListBlobsFlatPager("batch-uploads", nil).NextPage(context.Background())
	if err == nil && len(names.Segment.BlobItems) != 0 {
		t.Errorf("refused uploads left %d blobs", len(names.Segment.BlobItems))
	}
}

// TestOpenAIGo_ListAndRetriedCreate: batches list newest first a page at a
// time, and a create whose reply is lost on the way, which the SDK sends
// again, makes one job.
func TestOpenAIGo_ListAndRetriedCreate(t *testing.T) {
	t.Parallel()
	s := fastStack(t)
	c := v1Client(s, "contoso")
	var made []string
	for i := range 5 {
		f, err := upload(t, c, "f.jsonl", jsonl(t, fmt.Sprintf("l%d", i), 2, nil))
		if err != nil {
			t.Fatal(describe(err))
		}
		made = append(made, create(t, c, f.ID).ID)
	}
	var listed []string
	pages := 0
	params := openai.BatchListParams{Limit: openai.Int(2)}
	for {
		page, err := c.Batches.List(context.Background(), params)
		if err != nil {
			t.Fatal(describe(err))
		}
		pages++
		for _, b := range page.Data {
			listed = append(listed, b.ID)
		}
		if !page.HasMore {
			break
		}
		params.After = openai.String(page.Data[len(page.Data)-1].ID)
	}
	want := fmt.Sprint(reverse(made))
	if pages != 3 || fmt.Sprint(listed) != want {
		t.Errorf("listed %v in %d pages, want %s in 3", listed, pages, want)
	}
	var auto []string
	for it := c.Batches.ListAutoPaging(context.Background(), openai.BatchListParams{Limit: openai.Int(2)}); it.Next(); {
		auto = append(auto, it.Current().ID)
	}
	if fmt.Sprint(auto) != want {
		t.Errorf("auto-paging listed %v", auto)
	}

	// A proxy that forwards the first create and drops its reply.
	up, _ := url.Parse(s.URL)
	proxy := httputil.NewSingleHostReverseProxy(up)
	var creates atomic.Int32
	front := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/batches") && creates.Add(1) == 1 {
			rec := &discard{header: http.Header{}}
			proxy.ServeHTTP(rec, r) // the job is made...
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // ...and the reply lost
			}
			return
		}
		proxy.ServeHTTP(w, r)
	})}
	ln := listen(t)
	go front.Serve(ln)
	t.Cleanup(func() { front.Close() })
	flaky := openai.NewClient(option.WithBaseURL("http://"+ln.Addr().String()+"/api/openai/v1/"), option.WithAPIKey(s.Keys["contoso"]),
		option.WithHeader("x-functions-key", apptest.FunctionKey))
	f, err := upload(t, flaky, "retry.jsonl", jsonl(t, "r", 3, nil))
	if err != nil {
		t.Fatal(describe(err))
	}
	b := create(t, flaky, f.ID)
	if creates.Load() != 2 {
		t.Errorf("the SDK sent the create %d times, want 2 (the test needs its retry)", creates.Load())
	}
	page, err := c.Batches.List(context.Background(), openai.BatchListParams{Limit: openai.Int(100)})
	if err != nil {
		t.Fatal(describe(err))
	}
	n := 0
	for _, x := range page.Data {
		if x.InputFileID == f.ID {
			n++
			if x.ID != b.ID {
				t.Errorf("listed %s for the file, the retried create answered %s", x.ID, b.ID)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d batches of the retried create's file, want 1", n)
	}
	// Another create of the same file with other parameters is refused;
	// with an Idempotency-Key it is a new batch.
	if _, err := c.Batches.New(context.Background(), openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h, Metadata: map[string]string{"run": "2"}}, option.WithMaxRetries(0)); apiError(t, err).StatusCode != http.StatusConflict {
		t.Errorf("a second create of the file with other metadata: %v", describe(err))
	}
	again := create(t, c, f.ID, option.WithHeader("Idempotency-Key", "second-run"))
	if again.ID == b.ID {
		t.Error("an Idempotency-Key did not make a new batch")
	}
	if same := create(t, c, f.ID, option.WithHeader("Idempotency-Key", "second-run")); same.ID != again.ID {
		t.Errorf("the same Idempotency-Key made %s, then %s", again.ID, same.ID)
	}
}

func reverse(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
