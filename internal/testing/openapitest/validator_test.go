package openapitest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/testing/openapitest"
)

// TestValidator_Drift: each kind of drift between a handler and the
// document is caught, and an exchange that agrees with it passes.
func TestValidator_Drift(t *testing.T) {
	v := openapitest.New(t)
	const (
		js     = "application/json; charset=utf-8"
		oai    = "application/json"
		health = `{"status":"ok","uptime_seconds":3}`
		apiErr = `{"error":{"code":"not_found","message":"no such endpoint"}}`
		oaiErr = `{"error":{"message":"No such batch","type":"invalid_request_error","param":null,"code":"not_found"}}`
	)
	tenant := `{"id":"acme","display_name":"Acme","aliases":[],"monthly_token_budget":0,"state":"active","app_ids":[],"keys":[],` +
		`"created":"2026-11-17T12:00:00Z","updated":"2026-11-17T12:00:00Z"}`
	for _, tc := range []struct {
		name, method, target, reqBody string
		status                        int
		ctype, allow, body            string
		drift                         string // a word of the problem reported; "" for none
	}{
		{"agrees", "GET", "/api/v1/health", "", 200, js, "", health, ""},
		{"agrees, the door", "GET", "/api/openai/v1/batches/batch_x", "", 404, oai, "", oaiErr, ""},
		{"an unknown route's 404", "GET", "/api/v1/nowhere", "", 404, js, "", apiErr, ""},
		{"OPTIONS", "OPTIONS", "/api/v1/tenants/acme", "", 204, "", "GET, PATCH, OPTIONS", "", ""},
		{"a 405", "PUT", "/api/v1/health", "", 405, js, "GET, OPTIONS", apiErr, ""},
		{"a refused hostile request", "POST", "/api/v1/tenants", `{"id":"acme","owner":"x"}`, 400, js, "", apiErr, ""},

		{"undocumented route", "GET", "/api/v1/secrets", "", 200, js, "", `{}`, "undocumented route"},
		{"an unknown route's 404 in another shape", "GET", "/api/v1/nowhere", "", 404, "text/plain", "", "404 page not found", "content type"},
		{"the door's 404 in the API's shape", "GET", "/api/openai/v1/models", "", 404, oai, "", apiErr, "OpenAIError"},
		{"undocumented method", "DELETE", "/api/v1/health", "", 200, js, "", health, "undocumented method"},
		{"405 with a wrong Allow", "PUT", "/api/v1/health", "", 405, js, "GET, PUT, OPTIONS", apiErr, "Allow"},
		{"OPTIONS with a wrong Allow", "OPTIONS", "/api/v1/batches", "", 204, "", "GET, OPTIONS", "", "Allow"},
		{"undocumented status", "GET", "/api/v1/health", "", 418, js, "", apiErr, "undocumented status"},
		{"undocumented field", "GET", "/api/v1/health", "", 200, js, "", `{"status":"ok","uptime_seconds":3,"pid":42}`, "pid"},
		{"missing field", "GET", "/api/v1/health", "", 200, js, "", `{"status":"ok"}`, "uptime_seconds"},
		{"wrong type", "GET", "/api/v1/health", "", 200, js, "", `{"status":"ok","uptime_seconds":"3"}`, "uptime_seconds"},
		{"capitalised counts", "GET", "/api/v1/batches/j1", "", 200, js, "", job(`{"Total":1,"Completed":1,"Failed":0}`), "total"},
		{"wrong content type", "GET", "/api/v1/health", "", 200, "text/plain", "", health, "Content-Type"},
		{"error in another shape", "GET", "/api/v1/tenants/acme", "", 404, js, "", `{"error":"not found"}`, "error"},
		{"a success to a request the document refuses", "POST", "/api/v1/tenants", `{"id":"acme","owner":"x"}`, 201, js, "",
			`{"tenant":` + tenant + `,"api_key":"opk_x","key_id":"k1"}`, "refuses"},
		{"a bodyless 401 not behind the host", "GET", "/api/v1/batches", "", 401, "", "", "", "Content-Type"},
		{"the API's 401 in another shape", "GET", "/api/v1/batches", "", 401, js, "", `{"message":"no"}`, "error"},
		{"a body where none is documented", "DELETE", "/api/v1/tenants/acme/webhook", "", 204, js, "", `{}`, "body"},
	} {
		r := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.reqBody))
		if tc.reqBody != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		h := http.Header{}
		if tc.ctype != "" {
			h.Set("Content-Type", tc.ctype)
		}
		if tc.allow != "" {
			h.Set("Allow", tc.allow)
		}
		problems := v.Problems(r, []byte(tc.reqBody), tc.status, h, []byte(tc.body))
		switch {
		case tc.drift == "" && len(problems) > 0:
			t.Errorf("%s: reported %q", tc.name, problems)
		case tc.drift != "" && !strings.Contains(strings.Join(problems, " "), tc.drift):
			t.Errorf("%s: reported %q, want a problem naming %q", tc.name, problems, tc.drift)
		}
	}
}

func job(counts string) string {
	return fmt.Sprintf(`{"id":"j1","state":"submitted","alias":"summarize","items":1,"source":"inline","estimated_tokens":10,`+
		`"created":"2026-11-17T12:00:00Z","updated":"2026-11-17T12:00:00Z","request_counts":%s,`+
		`"outcomes":{"ok":0,"refused":0,"failed":0,"expired":0,"cancelled":0},"usage":{"prompt_tokens":0,"completion_tokens":0,`+
		`"cached_tokens":0,"reasoning_tokens":0,"total_tokens":0,"requests":0,"refusals":0,"estimated_cost_usd":0},`+
		`"parts":[],"links":{"self":"/api/v1/batches/j1","results":"/api/v1/batches/j1/results","cancel":"/api/v1/batches/j1/cancel"}}`, counts)
}

// recorder is a test that keeps its failures.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// TestValidator_FailsTheTest: the middleware and the transport fail their
// test on a drifted answer, and pass the answer on unchanged.
func TestValidator_FailsTheTest(t *testing.T) {
	drifted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"status":"ok","uptime_seconds":1,"debug":true}`)
	})
	rec := &recorder{TB: t}
	srv := httptest.NewServer(openapitest.Handler(rec, drifted))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/api/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || len(rec.failures) != 1 || !strings.Contains(rec.failures[0], "debug") {
		t.Errorf("middleware: %d, failures %q", res.StatusCode, rec.failures)
	}
	rec2 := &recorder{TB: t}
	res, err = (&http.Client{Transport: openapitest.Transport(rec2, nil)}).Get(srv.URL + "/api/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if len(rec2.failures) != 1 || !strings.Contains(rec2.failures[0], "debug") {
		t.Errorf("transport: failures %q", rec2.failures)
	}
}

// TestValidator_BehindHost: behind the Functions host, the host's own
// refusal and failed invocations pass; the app's answers are checked as
// ever.
func TestValidator_BehindHost(t *testing.T) {
	v := openapitest.New(t).BehindHost()
	for _, tc := range []struct {
		name, ctype, body string
		status            int
		ok                bool
	}{
		{"no function key", "", "", 401, true},
		{"a failed invocation", "text/plain; charset=utf-8", "function invocation failed\n", 500, true},
		{"the app's 401 in another shape", "application/json", `{"message":"no"}`, 401, false},
		{"the app's 500 in another shape", "application/json", `{"message":"no"}`, 500, false},
		{"a 401 with a text body", "text/plain", "no", 401, false},
	} {
		h := http.Header{}
		if tc.ctype != "" {
			h.Set("Content-Type", tc.ctype)
		}
		problems := v.Problems(httptest.NewRequest("GET", "/api/v1/batches", nil), nil, tc.status, h, []byte(tc.body))
		if (len(problems) == 0) != tc.ok {
			t.Errorf("%s: problems %q, want ok=%v", tc.name, problems, tc.ok)
		}
	}
}
