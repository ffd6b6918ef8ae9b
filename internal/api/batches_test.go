package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/api"
	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/invoke"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/openapitest"
	"github.com/offpath/offpath/internal/testing/poll"
)

// batchEnv is the API with the batch service, on Azurite and a simulator.
type batchEnv struct {
	t       *testing.T
	handler http.Handler
	svc     *batch.Service
	sim     *aoaisim.Server
	jobs    *tablestore.Jobs
	blobs   *blobstore.Store
	cont    batch.Containers
	keys    map[string]string
	admin   string
}

func newBatchEnv(t *testing.T) *batchEnv {
	t.Helper()
	az := sharedAzurite(t)
	speed := 3000.0
	sim, err := aoaisim.New(aoaisim.Config{Deployments: aoaisim.DefaultDeployments(), Speed: &speed}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = sim.Close() })
	client, err := azopenai.NewBatchClient(azopenai.BatchConfig{Endpoint: ts.URL, APIKey: aoaisim.DefaultKey, AllowLoopbackHTTP: true}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: az.ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	bc, err := azblob.NewClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := azurite.Suffix()
	e := &batchEnv{t: t, sim: sim, keys: map[string]string{},
		jobs: tablestore.NewJobs(svc, "abj"+n, nil), blobs: blobstore.New(bc, blobstore.Options{}),
		cont: batch.Containers{Inputs: "ain" + n, Results: "ares" + n, Uploads: "aup" + n}}
	tenants := tablestore.NewTenants(svc, "abt"+n)
	led := tablestore.NewLedger(svc, tablestore.LedgerOptions{Table: "abl" + n})
	b, err := os.ReadFile("../../models.json")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	for id, budget := range map[string]int64{"contoso": 0, "acme": 0, "tiny": 100} {
		tn := tenant.New(id, id, time.Now())
		tn.Aliases, tn.MonthlyTokenBudget = []string{"summarize", "embed"}, budget
		key, _, err := tn.RotateKey(rand.Reader, time.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := tenants.Create(context.Background(), tn); err != nil {
			t.Fatal(err)
		}
		e.keys[id] = key
	}
	var digest string
	if e.admin, digest, err = auth.NewAdminKey(rand.Reader); err != nil {
		t.Fatal(err)
	}
	hashes, err := auth.ParseAdminKeyHashes(digest)
	if err != nil {
		t.Fatal(err)
	}
	e.svc, err = batch.New(batch.Options{Jobs: e.jobs, Blobs: e.blobs, Azure: client, Ledger: led, Budgets: ledger.NewBudgets(led),
		Catalog: cat, Containers: e.cont, PollInterval: time.Nanosecond, LeaseTTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := api.New(api.Options{Build: api.Build{Version: "test"}, Started: time.Now(),
		Auth: auth.New(auth.Options{Credentials: tenants, AdminKeyHashes: hashes}), Tenants: tenants, Usage: led,
		Catalog: cat, Batches: e.svc, MaxBatchBody: 1 << 20})
	mux := invoke.NewMux(zerolog.New(io.Discard), invoke.Options{Timeout: time.Minute})
	mux.Forward("/api/", srv)
	e.handler = openapitest.Handler(t, mux) // every exchange checked against the API's contract
	return e
}

type batchResponse struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

func (e *batchEnv) do(method, target, credential string, body io.Reader, header ...string) batchResponse {
	e.t.Helper()
	r := httptest.NewRequest(method, target, body)
	if credential != "" {
		r.Header.Set("Authorization", "Bearer "+credential)
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, r)
	res := batchResponse{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(res.body, &res.json); err != nil {
			e.t.Fatalf("%s %s: body %q is not JSON: %v", method, target, res.body, err)
		}
	}
	return res
}

func jsonBody(v any) io.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

// nothingLeft checks that nothing was submitted or recorded.
func (e *batchEnv) nothingLeft(tenantID string) {
	e.t.Helper()
	if st := e.sim.State(); len(st.Files) != 0 || len(st.Batches) != 0 {
		e.t.Errorf("simulator has %d files and %d batches, want none", len(st.Files), len(st.Batches))
	}
	jobs, err := e.jobs.List(context.Background(), tenantID, "", "", 10)
	if err != nil || len(jobs) != 0 {
		e.t.Errorf("jobs of %s: %d (%v), want none", tenantID, len(jobs), err)
	}
	active, err := e.jobs.ListActive(context.Background())
	if err != nil || len(active) != 0 {
		e.t.Errorf("active index: %v (%v), want empty", active, err)
	}
	names, err := e.blobs.List(context.Background(), e.cont.Inputs, "")
	if err != nil || len(names) != 0 {
		e.t.Errorf("input blobs %v (%v), want none", names, err)
	}
}

// countingReader counts the bytes read from it.
type countingReader struct {
	n, limit int64
	read     atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n >= c.limit {
		return 0, io.EOF
	}
	k := min(int64(len(p)), c.limit-c.n)
	for i := range p[:k] {
		p[i] = ' '
	}
	c.n += k
	c.read.Add(k)
	return int(k), nil
}

func TestBatches_HostileInput(t *testing.T) {
	t.Parallel()
	e := newBatchEnv(t)
	item := func(id, prompt string) map[string]any { return map[string]any{"id": id, "prompt": prompt} }
	ok := func(items ...map[string]any) map[string]any {
		return map[string]any{"alias": "summarize", "system_prompt": "Summarise.", "items": items}
	}
	with := func(m map[string]any, k string, v any) map[string]any { m[k] = v; return m }
	tests := []struct {
		name   string
		tenant string
		body   io.Reader
		header []string
		status int
		code   string
	}{
		{"malformed JSON", "contoso", strings.NewReader(`{"alias":"summarize","items":[`), nil, 400, "invalid_json"},
		{"not an object", "contoso", strings.NewReader(`[1,2,3]`), nil, 400, "invalid_json"},
		{"trailing data", "contoso", strings.NewReader(`{"alias":"summarize","items":[{"id":"a","prompt":"p"}]} {}`), nil, 400, "invalid_json"},
		{"unknown field", "contoso", jsonBody(with(ok(item("a", "p")), "model", "gpt-4o")), nil, 400, "unknown_field"},
		{"unknown item field", "contoso", jsonBody(ok(map[string]any{"id": "a", "prompt": "p", "seed": 2})), nil, 400, "unknown_field"},
		{"empty body", "contoso", strings.NewReader(""), nil, 400, "invalid_json"},
		{"empty item list", "contoso", jsonBody(ok()), nil, 400, "no_items"},
		{"no items at all", "contoso", jsonBody(map[string]any{"alias": "summarize"}), nil, 400, "no_items"},
		{"duplicate item ids", "contoso", jsonBody(ok(item("a", "p"), item("b", "q"), item("a", "r"))), nil, 400, "duplicate_item_id"},
		{"alias not allowed", "contoso", jsonBody(with(ok(item("a", "p")), "alias", "extract")), nil, 403, "alias_not_allowed"},
		{"alias unknown", "contoso", jsonBody(with(ok(item("a", "p")), "alias", "gpt-5-ultra")), nil, 403, "alias_not_allowed"},
		{"alias without batch", "contoso", jsonBody(with(ok(item("a", "p")), "alias", "embed")), nil, 400, "alias_not_batch"},
		{"no alias", "contoso", jsonBody(with(ok(item("a", "p")), "alias", "")), nil, 400, "alias_required"},
		{"control character in id", "contoso", jsonBody(ok(item("a\u0000b", "p"))), nil, 400, "invalid_item_id"},
		{"newline in id", "contoso", jsonBody(ok(item("a\nb", "p"))), nil, 400, "invalid_item_id"},
		{"bidi override in id", "contoso", jsonBody(ok(item("a\u202eb", "p"))), nil, 400, "invalid_item_id"},
		{"invalid UTF-8 in id", "contoso", strings.NewReader("{\"alias\":\"summarize\",\"items\":[{\"id\":\"a\xffb\",\"prompt\":\"p\"}]}"), nil, 400, "invalid_item_id"},
		{"huge id", "contoso", jsonBody(ok(item(strings.Repeat("x", 100_000), "p"))), nil, 400, "invalid_item_id"},
		{"empty id", "contoso", jsonBody(ok(item("", "p"))), nil, 400, "invalid_item_id"},
		{"no content", "contoso", jsonBody(ok(item("a", ""))), nil, 400, "invalid_item"},
		{"prompt and messages", "contoso", jsonBody(ok(map[string]any{"id": "a", "prompt": "p", "messages": []map[string]string{{"role": "user", "content": "q"}}})), nil, 400, "invalid_item"},
		{"bad role", "contoso", jsonBody(ok(map[string]any{"id": "a", "messages": []map[string]string{{"role": "tool", "content": "q"}}})), nil, 400, "invalid_item"},
		{"negative max_tokens", "contoso", jsonBody(ok(map[string]any{"id": "a", "prompt": "p", "max_tokens": -1})), nil, 400, "invalid_max_tokens"},
		{"max_tokens not a number", "contoso", jsonBody(ok(map[string]any{"id": "a", "prompt": "p", "max_tokens": "lots"})), nil, 400, "invalid_json"},
		{"control characters in metadata", "contoso", jsonBody(with(ok(item("a", "p")), "metadata", map[string]string{"k": "v\u0007"})), nil, 400, "invalid_metadata"},
		{"bidi override in idempotency key", "contoso", jsonBody(with(ok(item("a", "p")), "idempotency_key", "nightly\u202e1")), nil, 400, "invalid_idempotency_key"},
		{"zero-width space in idempotency key", "contoso", jsonBody(with(ok(item("a", "p")), "idempotency_key", "nightly\u200b1")), nil, 400, "invalid_idempotency_key"},
		{"byte-order mark in idempotency key", "contoso", jsonBody(with(ok(item("a", "p")), "idempotency_key", "\ufeffnightly-1")), nil, 400, "invalid_idempotency_key"},
		{"format character in Idempotency-Key header", "contoso", jsonBody(ok(item("a", "p"))), []string{"Idempotency-Key", "nightly\u200b1"}, 400, "invalid_idempotency_key"},
		{"control character in idempotency key", "contoso", jsonBody(with(ok(item("a", "p")), "idempotency_key", "k\u0007")), nil, 400, "invalid_idempotency_key"},
		{"zero-width space in id", "contoso", jsonBody(ok(item("a\u200bb", "p"))), nil, 400, "invalid_item_id"},
		{"byte-order mark in metadata", "contoso", jsonBody(with(ok(item("a", "p")), "metadata", map[string]string{"\ufeffk": "v"})), nil, 400, "invalid_metadata"},
		{"bidi override in input_blob", "contoso", jsonBody(map[string]any{"alias": "summarize", "input_blob": "contoso/x\u202elnosj.jsonl"}), nil, 400, "invalid_input_blob"},
		{"idempotency header and body differ", "contoso", jsonBody(with(ok(item("a", "p")), "idempotency_key", "k1")), []string{"Idempotency-Key", "k2"}, 400, "idempotency_key_mismatch"},
		{"items and input_blob", "contoso", jsonBody(with(ok(item("a", "p")), "input_blob", "contoso/x.jsonl")), nil, 400, "items_and_input_blob"},
		{"input_blob of another tenant", "contoso", jsonBody(map[string]any{"alias": "summarize", "input_blob": "acme/corpus.jsonl"}), nil, 400, "invalid_input_blob"},
		{"input_blob climbing out", "contoso", jsonBody(map[string]any{"alias": "summarize", "input_blob": "contoso/../acme/corpus.jsonl"}), nil, 400, "invalid_input_blob"},
		{"input_blob absolute", "contoso", jsonBody(map[string]any{"alias": "summarize", "input_blob": "/contoso/corpus.jsonl"}), nil, 400, "invalid_input_blob"},
		{"input_blob URL", "contoso", jsonBody(map[string]any{"alias": "summarize", "input_blob": "https://evil.example/contoso/x.jsonl"}), nil, 400, "invalid_input_blob"},
		{"input_blob escaped", "contoso", jsonBody(map[string]any{"alias": "summarize", "input_blob": "contoso/%2e%2e/acme/x.jsonl"}), nil, 400, "invalid_input_blob"},
		{"input_blob backslash", "contoso", jsonBody(map[string]any{"alias": "summarize", "input_blob": "contoso\\..\\acme\\x.jsonl"}), nil, 400, "invalid_input_blob"},
		{"input_blob prefix trick", "contoso", jsonBody(map[string]any{"alias": "summarize", "input_blob": "contosoevil/x.jsonl"}), nil, 400, "invalid_input_blob"},
		{"input_blob missing", "contoso", jsonBody(map[string]any{"alias": "summarize", "input_blob": "contoso/nothing.jsonl"}), nil, 400, "input_blob_not_found"},
		{"over budget", "tiny", jsonBody(ok(item("a", "p"), item("b", "q"))), nil, 403, "budget_exceeded"},
		{"wrong media type", "contoso", jsonBody(ok(item("a", "p"))), []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.do(http.MethodPost, "/api/v1/batches", e.keys[tt.tenant], tt.body, tt.header...)
			if res.status != tt.status {
				t.Fatalf("status %d, want %d: %s", res.status, tt.status, res.body)
			}
			if code := errorCode(res); code != tt.code {
				t.Errorf("error code %q, want %q: %s", code, tt.code, res.body)
			}
			e.nothingLeft(tt.tenant)
		})
	}

	t.Run("500 MB body is refused unread", func(t *testing.T) {
		body := &countingReader{limit: 500 << 20}
		r := httptest.NewRequest(http.MethodPost, "/api/v1/batches", body)
		r.ContentLength = 500 << 20
		r.Header.Set("Authorization", "Bearer "+e.keys["contoso"])
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, r)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413: %s", rec.Code, rec.Body)
		}
		if n := body.read.Load(); n != 0 {
			t.Errorf("%d bytes of the body were read, want 0", n)
		}
		e.nothingLeft("contoso")
	})
	t.Run("oversized body without a length", func(t *testing.T) {
		body := &countingReader{limit: 5 << 20}
		r := httptest.NewRequest(http.MethodPost, "/api/v1/batches", io.MultiReader(body))
		r.ContentLength = -1
		r.Header.Set("Authorization", "Bearer "+e.keys["contoso"])
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, r)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413", rec.Code)
		}
		if n := body.read.Load(); n > 2<<20 {
			t.Errorf("%d bytes read from a body past a 1 MiB limit", n)
		}
		e.nothingLeft("contoso")
	})
	t.Run("no credential and the admin's", func(t *testing.T) {
		if res := e.do(http.MethodPost, "/api/v1/batches", "", jsonBody(ok(item("a", "p")))); res.status != 401 {
			t.Errorf("no credential: %d, want 401", res.status)
		}
		if res := e.do(http.MethodPost, "/api/v1/batches", e.admin, jsonBody(ok(item("a", "p")))); res.status != 403 {
			t.Errorf("admin: %d, want 403", res.status)
		}
		if res := e.do(http.MethodGet, "/api/v1/batches", e.admin, nil); res.status != 403 {
			t.Errorf("admin list: %d, want 403", res.status)
		}
		e.nothingLeft("contoso")
	})
}

func errorCode(res batchResponse) string {
	m, _ := res.json["error"].(map[string]any)
	c, _ := m["code"].(string)
	return c
}

// TestBatches_ThroughTheAPI submits, reads, lists, replays, harvests and
// cancels jobs through the API, and shows that another tenant sees none of
// it.
func TestBatches_ThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newBatchEnv(t)
	body := func(key string, n int) io.Reader {
		var items []map[string]any
		for i := range n {
			items = append(items, map[string]any{"id": fmt.Sprintf("doc-%d", i), "prompt": fmt.Sprintf("Document %d is about printers.", i)})
		}
		return jsonBody(map[string]any{"alias": "summarize", "system_prompt": "Summarise.", "max_tokens": 20,
			"idempotency_key": key, "metadata": map[string]string{"purpose": "test"}, "items": items})
	}
	ck := e.keys["contoso"]
	res := e.do(http.MethodPost, "/api/v1/batches", ck, body("nightly-1", 6))
	if res.status != http.StatusAccepted {
		t.Fatalf("submit: %d %s", res.status, res.body)
	}
	id, _ := res.json["id"].(string)
	if res.header.Get("Location") != "/api/v1/batches/"+id || res.json["state"] != "accepted" {
		t.Errorf("submit answered Location %q, state %v", res.header.Get("Location"), res.json["state"])
	}
	// The same key returns the same job; reused for another request, 409.
	again := e.do(http.MethodPost, "/api/v1/batches", ck, body("nightly-1", 6))
	if again.status != http.StatusAccepted || again.json["id"] != id || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %d id %v (want %s) replayed %q", again.status, again.json["id"], id, again.header.Get("Idempotent-Replayed"))
	}
	if r := e.do(http.MethodPost, "/api/v1/batches", ck, body("nightly-1", 7)); r.status != http.StatusConflict || errorCode(r) != "idempotency_key_reused" {
		t.Errorf("reused key: %d %s", r.status, r.body)
	}
	// Another tenant sees nothing of it: 404 everywhere, never 403.
	ak := e.keys["acme"]
	for _, rq := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/batches/" + id}, {http.MethodGet, "/api/v1/batches/" + id + "/results"},
		{http.MethodPost, "/api/v1/batches/" + id + "/cancel"},
		{http.MethodGet, "/api/v1/batches/..%2F..%2Ftenants"}, {http.MethodGet, "/api/v1/batches/" + strings.Repeat("z", 5000)},
	} {
		if r := e.do(rq.method, rq.path, ak, nil); r.status != http.StatusNotFound {
			t.Errorf("acme %s %s: %d, want 404", rq.method, rq.path[:min(len(rq.path), 60)], r.status)
		}
	}
	if r := e.do(http.MethodGet, "/api/v1/batches", ak, nil); r.status != 200 || len(r.json["data"].([]any)) != 0 {
		t.Errorf("acme's list: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodGet, "/api/v1/batches/"+id+"/results", ck, nil); r.status != http.StatusConflict || errorCode(r) != "results_not_ready" {
		t.Errorf("results before the harvest: %d %s", r.status, r.body)
	}
	// Two more jobs, to page through; one cancelled at once.
	id2, _ := e.do(http.MethodPost, "/api/v1/batches", ck, body("nightly-2", 2)).json["id"].(string)
	id3, _ := e.do(http.MethodPost, "/api/v1/batches", ck, body("", 2)).json["id"].(string)
	if r := e.do(http.MethodPost, "/api/v1/batches/"+id3+"/cancel", ck, nil); r.status != http.StatusAccepted || r.json["state"] != "cancelled" {
		t.Errorf("cancel of an accepted job: %d %s", r.status, r.body)
	}
	p1 := e.do(http.MethodGet, "/api/v1/batches?limit=2", ck, nil)
	data, _ := p1.json["data"].([]any)
	next, _ := p1.json["next"].(string)
	if p1.status != 200 || len(data) != 2 || next == "" || data[0].(map[string]any)["id"] != id3 {
		t.Fatalf("first page: %d %s", p1.status, p1.body)
	}
	p2 := e.do(http.MethodGet, next, ck, nil)
	if data2, _ := p2.json["data"].([]any); p2.status != 200 || len(data2) != 1 || data2[0].(map[string]any)["id"] != id || p2.json["next"] != nil {
		t.Errorf("second page: %d %s", p2.status, p2.body)
	}
	if r := e.do(http.MethodGet, "/api/v1/batches?state=cancelled", ck, nil); len(r.json["data"].([]any)) != 1 {
		t.Errorf("state=cancelled: %s", r.body)
	}
	for _, bad := range []string{"?state=bogus", "?cursor=../../x", "?limit=0", "?limit=1000", "?tenant=acme"} {
		if r := e.do(http.MethodGet, "/api/v1/batches"+bad, ck, nil); r.status != 400 {
			t.Errorf("list %s: %d, want 400", bad, r.status)
		}
	}
	// Poll until harvested, then read the results through the API.
	var job batchResponse
	if !poll.Within(30*time.Second, func() bool {
		if _, err := e.svc.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
		job = e.do(http.MethodGet, "/api/v1/batches/"+id, ck, nil)
		r2 := e.do(http.MethodGet, "/api/v1/batches/"+id2, ck, nil)
		return job.json["state"] == "harvested" && r2.json["state"] == "harvested"
	}) {
		t.Fatalf("not harvested: %s", job.body)
	}
	u, _ := job.json["usage"].(map[string]any)
	if u["prompt_tokens"].(float64) <= 0 || job.json["final"] != "completed" || job.json["outcomes"].(map[string]any)["ok"].(float64) != 6 {
		t.Errorf("harvested job: %s", job.body)
	}
	// Azure's counts in Azure's (and the rest of the API's) snake_case.
	if !bytes.Contains(job.body, []byte(`"request_counts":{"total":6,"completed":6,"failed":0}`)) {
		t.Errorf("request_counts not in snake_case: %s", job.body)
	}
	r := e.do(http.MethodGet, "/api/v1/batches/"+id+"/results", ck, nil)
	if r.status != 200 || r.header.Get("Offpath-Results-Complete") != "true" || r.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("results: %d %v", r.status, r.header)
	}
	lines := strings.Split(strings.TrimSpace(string(r.body)), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		var rl batch.ResultLine
		if err := json.Unmarshal([]byte(l), &rl); err != nil || rl.Outcome != batch.OK || rl.Answer == "" {
			t.Errorf("result line %s: %v", l, err)
		}
		seen[rl.ItemID] = true
	}
	if len(lines) != 6 || len(seen) != 6 {
		t.Errorf("%d result lines for %d items, want 6", len(lines), len(seen))
	}
	if r := e.do(http.MethodPost, "/api/v1/batches/"+id+"/cancel", ck, nil); r.status != http.StatusConflict || errorCode(r) != "job_finished" {
		t.Errorf("cancel of a harvested job: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodPost, "/api/v1/batches/"+id+"/cancel", ck, strings.NewReader(`{"force":true}`)); r.status != 400 {
		t.Errorf("cancel with an unknown field: %d", r.status)
	}
}

// TestBatches_InputBlob submits a corpus the tenant placed in its own area
// of the uploads container.
func TestBatches_InputBlob(t *testing.T) {
	t.Parallel()
	e := newBatchEnv(t)
	w, err := e.blobs.Create(context.Background(), e.cont.Uploads, "contoso/corpora/nov.jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		fmt.Fprintf(w, `{"id":"c-%d","prompt":"Corpus document %d."}`+"\n", i, i)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ck := e.keys["contoso"]
	res := e.do(http.MethodPost, "/api/v1/batches", ck, jsonBody(map[string]any{"alias": "summarize", "input_blob": "contoso/corpora/nov.jsonl"}))
	if res.status != http.StatusAccepted || res.json["items"].(float64) != 30 || res.json["source"] != "contoso/corpora/nov.jsonl" {
		t.Fatalf("submit: %d %s", res.status, res.body)
	}
	// The same path from another tenant is outside its area.
	if r := e.do(http.MethodPost, "/api/v1/batches", e.keys["acme"], jsonBody(map[string]any{"alias": "summarize", "input_blob": "contoso/corpora/nov.jsonl"})); r.status != 400 {
		t.Errorf("acme referencing contoso's corpus: %d %s", r.status, r.body)
	}
	// A corpus with a bad line is refused whole, naming the line.
	w, _ = e.blobs.Create(context.Background(), e.cont.Uploads, "contoso/bad.jsonl", nil)
	fmt.Fprint(w, "{\"id\":\"a\",\"prompt\":\"x\"}\n{\"id\":\"a\",\"prompt\":\"y\"}\n")
	_ = w.Close()
	if r := e.do(http.MethodPost, "/api/v1/batches", ck, jsonBody(map[string]any{"alias": "summarize", "input_blob": "contoso/bad.jsonl"})); r.status != 400 || errorCode(r) != "duplicate_item_id" {
		t.Errorf("corpus with a duplicate id: %d %s", r.status, r.body)
	}
}
