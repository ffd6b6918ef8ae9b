package api_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestHostileInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.keys["contoso"]
	for _, month := range []string{"2026-13", "2026-00", "2026-1", "26-11", "2026/11", "2026-11-01", "now", "", "%00", "2026-11%27", "1999-12",
		"２０２６-11", "-2026-11", url.QueryEscape("2026-11' or PartitionKey ne '"), strings.Repeat("9", 1000)} {
		res := e.do("GET", "/api/v1/usage?month="+month, key, nil)
		e.expect(res, http.StatusBadRequest, "invalid_month")
		if len(res.body) > 400 {
			t.Errorf("month %.20q: the error echoes too much: %d bytes", month, len(res.body))
		}
	}
	e.expect(e.do("GET", "/api/v1/usage?month=2026-11&month=2026-12", key, nil), http.StatusBadRequest, "bad_query")
	e.expect(e.do("GET", "/api/v1/usage?month=2026-11&x=1", key, nil), http.StatusBadRequest, "unknown_parameter")
	e.expect(e.do("GET", "/api/v1/usage?month=%zz", key, nil), http.StatusBadRequest, "bad_query")
	e.expect(e.do("GET", "/api/v1/tenants?limit=5", e.admin, nil), http.StatusBadRequest, "unknown_parameter")
	// The Functions host forwards a function key given as ?code=: it is not ours to refuse.
	e.expect(e.do("GET", "/api/v1/usage?month=2026-11&code=local-function-key", key, nil), http.StatusOK, "")
	e.expect(e.do("GET", "/api/v1/tenants?code=local-function-key", e.admin, nil), http.StatusOK, "")

	// Huge query strings are refused before anything else, even unauthenticated.
	huge := "/api/v1/usage?month=2026-11&pad=" + strings.Repeat("a", 10_000)
	e.expect(e.do("GET", huge, key, nil), http.StatusRequestURITooLong, "query_too_long")
	e.expect(e.do("GET", huge, "", nil), http.StatusRequestURITooLong, "query_too_long")

	// Bodies: too large (declared or streamed), unknown fields, not JSON.
	big := `{"id":"bigco","display_name":"` + strings.Repeat("x", 2<<20) + `"}`
	e.expect(e.do("POST", "/api/v1/tenants", e.admin, big), http.StatusRequestEntityTooLarge, "body_too_large")
	r := httptest.NewRequest("POST", "/api/v1/tenants", &chunked{strings.NewReader(big)})
	r.ContentLength = -1
	r.Header.Set("Authorization", "Bearer "+e.admin)
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, r)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("streamed oversized body: %d %s", rec.Code, rec.Body)
	}
	e.expect(e.do("POST", "/api/v1/tenants", e.admin, `{"id":"x1","admin":true}`), http.StatusBadRequest, "unknown_field")
	e.expect(e.do("POST", "/api/v1/tenants", e.admin, `{"id":"x1"} {"id":"x2"}`), http.StatusBadRequest, "invalid_json")
	e.expect(e.do("POST", "/api/v1/tenants", e.admin, `{"id":`), http.StatusBadRequest, "invalid_json")
	e.expect(e.do("POST", "/api/v1/tenants", e.admin, `["x"]`), http.StatusBadRequest, "invalid_json")
	e.expect(e.do("POST", "/api/v1/tenants", e.admin, `{"id":5}`), http.StatusBadRequest, "invalid_json")
	e.expect(e.do("POST", "/api/v1/tenants", e.admin, nil), http.StatusBadRequest, "invalid_json")
	r = httptest.NewRequest("POST", "/api/v1/tenants", strings.NewReader(`id=x`))
	r.Header.Set("Authorization", "Bearer "+e.admin)
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec = httptest.NewRecorder()
	e.handler.ServeHTTP(rec, r)
	if rec.Code != http.StatusUnsupportedMediaType {
		t.Errorf("form body: %d", rec.Code)
	}

	// Tenant ids that Table Storage keys forbid, or that would break out of
	// a key or a filter, are refused at the edge, in the body and the path.
	for _, id := range []string{"a/b", `a\b`, "a#b", "a?b", "a\x00b", "a\nb", "a\x7fb", "x' or '1'='1", "..", "a|2026-11", "Contoso", "a b", "é", "", strings.Repeat("a", 64)} {
		e.expect(e.do("POST", "/api/v1/tenants", e.admin, map[string]any{"id": id}), http.StatusBadRequest, "invalid")
	}
	for _, path := range []string{"a%2Fb", "a%5Cb", "a%23b", "a%3Fb", "a%00b", "x%27%20or%20%271%27%3D%271", "%2E%2E", "a%7C2026-11", "Contoso", "%C3%A9"} {
		e.expect(e.do("GET", "/api/v1/tenants/"+path, e.admin, nil), http.StatusBadRequest, "invalid_tenant_id")
		e.expect(e.do("PATCH", "/api/v1/tenants/"+path, e.admin, map[string]any{"display_name": "x"}), http.StatusBadRequest, "invalid_tenant_id")
	}
	if res := e.do("GET", "/api/v1/tenants", e.admin, nil); len(res.json["tenants"].([]any)) != 2 {
		t.Errorf("hostile input created tenants: %s", res.body)
	}
}

// chunked hides a reader's length, as a chunked request body does.
type chunked struct{ r *strings.Reader }

func (c *chunked) Read(p []byte) (int, error) { return c.r.Read(p) }
