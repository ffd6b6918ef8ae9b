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
	s := api.New(api.Build{Version: "1.2.3", Go: "go1.26"}, time.Now())
	tests := []struct {
		method, path string
		want         int
		field, value string
	}{
		{http.MethodGet, "/api/v1/health", http.StatusOK, "status", "ok"},
		{http.MethodGet, "/api/v1/version", http.StatusOK, "version", "1.2.3"},
		{http.MethodGet, "/api/v1/nope", http.StatusNotFound, "error", "no such endpoint: GET /api/v1/nope"},
		{http.MethodPost, "/api/v1/health", http.StatusMethodNotAllowed, "", ""},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
		if rec.Code != tt.want {
			t.Errorf("%s %s: status %d, want %d", tt.method, tt.path, rec.Code, tt.want)
			continue
		}
		if tt.field == "" {
			continue
		}
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Errorf("%s %s: body %q: %v", tt.method, tt.path, rec.Body, err)
		}
		if body[tt.field] != tt.value {
			t.Errorf("%s %s: %s = %v, want %q", tt.method, tt.path, tt.field, body[tt.field], tt.value)
		}
	}
}
