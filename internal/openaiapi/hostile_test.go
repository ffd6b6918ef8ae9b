package openaiapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tenant"
)

// stubAuth takes "Bearer <tenant>" for a tenant, "Bearer admin" for the
// admin, and refuses anything else.
type stubAuth struct{}

func (stubAuth) Authenticate(_ context.Context, r *http.Request) (auth.Principal, error) {
	switch v := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); v {
	case "admin":
		return auth.Principal{Admin: true, Method: auth.AdminKey}, nil
	case "contoso", "fabrikam", "suspended":
		return auth.Principal{TenantID: v, Method: auth.APIKey}, nil
	}
	return auth.Principal{}, auth.ErrUnauthenticated
}

type stubTenants struct{}

func (stubTenants) Get(_ context.Context, id string) (tenant.Tenant, error) {
	t := tenant.New(id, id, time.Now())
	t.Aliases = []string{"summarize"}
	if id == "suspended" {
		t.State = tenant.Suspended
	}
	return t, nil
}

// refusingBatches fails the test if a refused request reaches the control
// plane.
type refusingBatches struct{ t *testing.T }

func (b refusingBatches) Submit(context.Context, tenant.Tenant, batch.Request) (batch.Job, bool, error) {
	b.t.Error("a refused request reached Submit")
	return batch.Job{}, false, batch.ErrNotFound
}
func (b refusingBatches) Get(context.Context, string, string) (batch.Job, error) {
	return batch.Job{}, batch.ErrNotFound
}
func (b refusingBatches) List(context.Context, string, batch.State, string, int) ([]batch.Job, string, error) {
	return nil, "", nil
}
func (b refusingBatches) Cancel(context.Context, string, string) (batch.Job, error) {
	return batch.Job{}, batch.ErrNotFound
}

// TestHostileInput: every refusal is in OpenAI's error shape with its
// status and code, and a refused upload stores nothing.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	az := azurite.Start(t)
	client, err := azblob.NewClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	models, err := os.ReadFile("../../models.json")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse(models)
	if err != nil {
		t.Fatal(err)
	}
	door := New(Options{Auth: stubAuth{}, Tenants: stubTenants{}, Batches: refusingBatches{t}, Blobs: blobstore.New(client, blobstore.Options{}),
		Catalog: cat, MaxFileBytes: 4096})
	srv := httptest.NewServer(door)
	defer srv.Close()

	line := `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"summarize","messages":[{"role":"user","content":"hi"}]}}` + "\n"
	form := func(fields map[string]string, files ...string) (string, []byte) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		for k, v := range fields {
			_ = mw.WriteField(k, v)
		}
		for _, f := range files {
			w, _ := mw.CreateFormFile("file", "in.jsonl")
			_, _ = io.WriteString(w, f)
		}
		_ = mw.Close()
		return mw.FormDataContentType(), b.Bytes()
	}
	batchForm := func(files ...string) (string, []byte) { return form(map[string]string{"purpose": "batch"}, files...) }

	cases := []struct {
		name, method, path, cred, ctype string
		body                            []byte
		status                          int
		code                            string
	}{
		{"no credential", "GET", "/api/openai/v1/batches", "", "", nil, 401, "invalid_api_key"},
		{"wrong credential", "GET", "/api/openai/v1/batches", "nobody", "", nil, 401, "invalid_api_key"},
		{"admin", "GET", "/api/openai/v1/batches", "admin", "", nil, 403, "forbidden"},
		{"suspended", "GET", "/api/openai/v1/files", "suspended", "", nil, 403, "tenant_suspended"},
		{"classic without api-version", "GET", "/api/openai/batches", "contoso", "", nil, 404, "404"},
		{"method", "PUT", "/api/openai/v1/batches", "contoso", "", nil, 405, "method_not_allowed"},
		{"unknown path", "GET", "/api/openai/v1/models", "contoso", "", nil, 404, "not_found"},
		{"unknown parameter", "GET", "/api/openai/v1/batches?state=x", "contoso", "", nil, 400, "invalid_request"},
		{"long query", "GET", "/api/openai/v1/batches?after=" + strings.Repeat("x", 3000), "contoso", "", nil, 414, "query_too_long"},
		{"bad limit", "GET", "/api/openai/v1/batches?limit=1000", "contoso", "", nil, 400, "invalid_request"},
		{"bad after", "GET", "/api/openai/v1/batches?after=../../x", "contoso", "", nil, 400, "invalid_request"},
		{"traversal file id", "GET", "/api/openai/v1/files/..%2F..%2Fcontoso", "contoso", "", nil, 404, "not_found"},
		{"garbage batch id", "GET", "/api/openai/v1/batches/batch_%00", "contoso", "", nil, 404, "not_found"},
		{"not multipart", "POST", "/api/openai/v1/files", "contoso", "application/json", []byte(`{}`), 415, "invalid_request"},
		{"broken multipart", "POST", "/api/openai/v1/files", "contoso", "multipart/form-data; boundary=zz", []byte("--zz\r\nbroken"), 400, "invalid_request"},
		{"create unknown field", "POST", "/api/openai/v1/batches", "contoso", "application/json", []byte(`{"input_file_id":"f","endpoint":"/v1/chat/completions","completion_window":"24h","x":1}`), 400, "invalid_request"},
		{"create window", "POST", "/api/openai/v1/batches", "contoso", "application/json", []byte(`{"input_file_id":"f","endpoint":"/v1/chat/completions","completion_window":"48h"}`), 400, "invalid_request"},
		{"create endpoint", "POST", "/api/openai/v1/batches", "contoso", "application/json", []byte(`{"input_file_id":"f","endpoint":"/v1/embeddings","completion_window":"24h"}`), 400, "invalid_request"},
		{"create reserved metadata", "POST", "/api/openai/v1/batches", "contoso", "application/json", []byte(`{"input_file_id":"f","endpoint":"/v1/chat/completions","completion_window":"24h","metadata":{"offpath":"x"}}`), 400, "invalid_request"},
		{"create unknown file", "POST", "/api/openai/v1/batches", "contoso", "application/json", []byte(`{"input_file_id":"file-0000000000aaaaa","endpoint":"/v1/chat/completions","completion_window":"24h"}`), 400, "invalid_request"},
		{"create huge body", "POST", "/api/openai/v1/batches", "contoso", "application/json", bytes.Repeat([]byte(" "), 70<<10), 413, "invalid_request"},
	}
	add := func(name string, status int, code string, ctype string, body []byte) {
		cases = append(cases, struct {
			name, method, path, cred, ctype string
			body                            []byte
			status                          int
			code                            string
		}{name, "POST", "/api/openai/v1/files", "contoso", ctype, body, status, code})
	}
	var many strings.Builder
	for i := range 60 {
		many.WriteString(strings.Replace(line, `"a"`, `"a`+strconv.Itoa(i)+`"`, 1))
	}
	ct, b := batchForm(many.String())
	add("oversized file", 413, "file_too_large", ct, b)
	ct, b = form(map[string]string{"purpose": "assistants"}, line)
	add("wrong purpose", 400, "invalid_request", ct, b)
	ct, b = form(map[string]string{"purpose": "batch", "user": "x"}, line)
	add("unknown form field", 400, "invalid_request", ct, b)
	ct, b = batchForm(line, line)
	add("two files", 400, "invalid_request", ct, b)
	ct, b = batchForm()
	add("no file", 400, "invalid_request", ct, b)
	ct, b = batchForm(strings.Replace(line, `"a"`, `"a\u0007b"`, 1))
	add("control character in custom_id", 400, "invalid_request", ct, b)
	ct, b = batchForm(strings.Replace(line, `"hi"`, `[{"type":"image_url","image_url":{"url":"http://x"}}]`, 1))
	add("image content", 400, "invalid_request", ct, b)
	ct, b = batchForm(strings.Replace(line, `"POST"`, `"GET"`, 1))
	add("method GET", 400, "invalid_request", ct, b)
	ct, b = batchForm(strings.Replace(line, `{"custom_id":"a",`, `{`, 1))
	add("no custom_id", 400, "invalid_request", ct, b)

	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, bytes.NewReader(tc.body))
		if tc.cred != "" {
			req.Header.Set("Authorization", "Bearer "+tc.cred)
		}
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    string  `json:"code"`
			} `json:"error"`
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if err := json.Unmarshal(raw, &e); err != nil || res.StatusCode != tc.status || e.Error.Code != tc.code ||
			e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
			t.Errorf("%s: %d %s, want %d %s", tc.name, res.StatusCode, raw, tc.status, tc.code)
		}
	}
	if names, err := door.o.Blobs.List(context.Background(), batch.DefaultUploadsContainer, ""); err != nil || len(names) != 0 {
		t.Errorf("refused uploads left %v (%v)", names, err)
	}
}

// TestMethods: on both surfaces OPTIONS answers 204 with the route's
// methods, before any credential; another method is 405 with them, in
// OpenAI's error shape.
func TestMethods(t *testing.T) {
	t.Parallel()
	door := New(Options{Auth: stubAuth{}, Tenants: stubTenants{}, Batches: refusingBatches{t}})
	for _, tc := range []struct {
		method, path string
		status       int
		allow, code  string
	}{
		{"OPTIONS", "/api/openai/v1/files", 204, "GET, POST, OPTIONS", ""},
		{"OPTIONS", "/api/openai/files/file-1?api-version=2025-04-01-preview", 204, "GET, DELETE, OPTIONS", ""},
		{"OPTIONS", "/api/openai/v1/batches/batch_1/cancel", 204, "POST, OPTIONS", ""},
		{"DELETE", "/api/openai/v1/batches/batch_1", 405, "GET, OPTIONS", "method_not_allowed"},
		{"PATCH", "/api/openai/batches?api-version=2025-04-01-preview", 405, "GET, POST, OPTIONS", "method_not_allowed"},
		{"OPTIONS", "/api/openai/v1/models", 404, "", "not_found"},
	} {
		rec := httptest.NewRecorder()
		door.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		var e errorBody
		if rec.Code != tc.status || rec.Header().Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d Allow %q, want %d Allow %q", tc.method, tc.path, rec.Code, rec.Header().Get("Allow"), tc.status, tc.allow)
		} else if tc.code == "" && rec.Body.Len() != 0 {
			t.Errorf("%s %s: a body %q, want none", tc.method, tc.path, rec.Body)
		} else if tc.code != "" && (json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Code != tc.code || e.Error.Message == "") {
			t.Errorf("%s %s: %s, want error.code %q", tc.method, tc.path, rec.Body, tc.code)
		}
	}
}
