package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/api"
	"github.com/offpath/offpath/internal/testing/openapitest"
)

func TestServer_Routes(t *testing.T) {
	t.Parallel()
	s := openapitest.Handler(t, api.New(api.Options{Build: api.Build{Version: "1.2.3", Go: "go1.26"}, Started: time.Now()}))
	tests := []struct {
		method, path string
		want         int
		field, value string
	}{
		{http.MethodGet, "/api/v1/health", http.StatusOK, "status", "ok"},
		{http.MethodGet, "/api/v1/version", http.StatusOK, "version", "1.2.3"},
		{http.MethodGet, "/api/v1/nope", http.StatusNotFound, "error.code", "not_found"},
		{http.MethodPost, "/api/v1/health", http.StatusMethodNotAllowed, "error.code", "method_not_allowed"},
		{http.MethodGet, "/api/v1/usage", http.StatusServiceUnavailable, "error.code", "unavailable"},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
		if rec.Code != tt.want {
			t.Errorf("%s %s: status %d, want %d", tt.method, tt.path, rec.Code, tt.want)
			continue
		}
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Errorf("%s %s: body %q: %v", tt.method, tt.path, rec.Body, err)
		}
		if got := field(body, tt.field); got != tt.value {
			t.Errorf("%s %s: %s = %v, want %q", tt.method, tt.path, tt.field, got, tt.value)
		}
	}
}

// field returns a dotted path's value in a decoded JSON object.
func field(v any, path string) any {
	for path != "" {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		var key string
		key, path, _ = cut(path)
		v = m[key]
	}
	return v
}

func cut(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// TestServer_MethodsAndUnknownRoutes: OPTIONS answers 204 with the
// route's methods; a method a route does not serve is 405 with them and
// the error shape; a path that is no route is 404 with the error shape,
// whatever the method.
func TestServer_MethodsAndUnknownRoutes(t *testing.T) {
	t.Parallel()
	s := openapitest.Handler(t, api.New(api.Options{Build: api.Build{Version: "1.2.3", Go: "go1.26"}, Started: time.Now()}))
	tests := []struct {
		method, path string
		want         int
		allow, code  string
	}{
		{http.MethodOptions, "/api/v1/health", http.StatusNoContent, "GET, OPTIONS", ""},
		{http.MethodOptions, "/api/v1/tenants/acme", http.StatusNoContent, "GET, PATCH, OPTIONS", ""},
		{http.MethodOptions, "/api/v1/tenants/acme/webhook", http.StatusNoContent, "GET, PUT, DELETE, OPTIONS", ""},
		{http.MethodOptions, "/api/v1/batches", http.StatusNoContent, "GET, POST, OPTIONS", ""},
		{http.MethodDelete, "/api/v1/batches/b1", http.StatusMethodNotAllowed, "GET, OPTIONS", "method_not_allowed"},
		{http.MethodPut, "/api/v1/usage", http.StatusMethodNotAllowed, "GET, OPTIONS", "method_not_allowed"},
		{"BREW", "/api/v1/version", http.StatusMethodNotAllowed, "GET, OPTIONS", "method_not_allowed"},
		{http.MethodOptions, "/api/v1/nope", http.StatusNotFound, "", "not_found"},
		{http.MethodDelete, "/api/v2/tenants", http.StatusNotFound, "", "not_found"},
		{http.MethodGet, "/api/v1/tenants/a/b/c/d", http.StatusNotFound, "", "not_found"},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
		if rec.Code != tt.want || rec.Header().Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d Allow %q, want %d Allow %q", tt.method, tt.path, rec.Code, rec.Header().Get("Allow"), tt.want, tt.allow)
			continue
		}
		if tt.code == "" {
			if rec.Body.Len() != 0 {
				t.Errorf("%s %s: a body %q, want none", tt.method, tt.path, rec.Body)
			}
			continue
		}
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || field(body, "error.code") != tt.code ||
			rec.Header().Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("%s %s: %s %q, want error.code %q (%v)", tt.method, tt.path, rec.Header().Get("Content-Type"), rec.Body, tt.code, err)
		}
	}
}

// TestServer_OpenAPI: the contract is served without a credential, as the
// JSON of the embedded document, cacheable and revalidated by its ETag.
func TestServer_OpenAPI(t *testing.T) {
	t.Parallel()
	s := openapitest.Handler(t, api.New(api.Options{Started: time.Now()}))
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/openapi.json?code=function-key", nil))
	want, err := api.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	etag := rec.Header().Get("ETag")
	if rec.Code != http.StatusOK || rec.Body.String() != string(want) || etag == "" ||
		rec.Header().Get("Cache-Control") != "public, max-age=3600" || rec.Header().Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("GET openapi.json: %d %v, %d bytes", rec.Code, rec.Header(), rec.Body.Len())
	}
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || doc.OpenAPI != "3.0.3" || doc.Paths["/api/v1/openapi.json"] == nil {
		t.Errorf("the document: openapi %q, %d paths (%v)", doc.OpenAPI, len(doc.Paths), err)
	}
	for _, inm := range []string{etag, `"other", ` + etag, "*"} {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/openapi.json", nil)
		r.Header.Set("If-None-Match", inm)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, r)
		if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
			t.Errorf("If-None-Match %s: %d, %d bytes", inm, rec.Code, rec.Body.Len())
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/api/v1/openapi.json", nil)
	r.Header.Set("If-None-Match", `"stale"`)
	rec = httptest.NewRecorder()
	if s.ServeHTTP(rec, r); rec.Code != http.StatusOK {
		t.Errorf("a stale ETag: %d, want 200", rec.Code)
	}
}
