package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/api"
)

func TestServer_Routes(t *testing.T) {
	t.Parallel()
	s := api.New(api.Options{Build: api.Build{Version: "1.2.3", Go: "go1.26"}, Started: time.Now()})
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
