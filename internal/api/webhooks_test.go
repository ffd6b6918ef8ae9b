package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestWebhooks_Admin: the admin registers a tenant's endpoint and sees
// its secret once; tenants cannot; bad URLs and unknown tenants are
// refused; the events list and deletion work.
func TestWebhooks_Admin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const path = "/api/v1/tenants/contoso/webhook"
	e.expect(e.do("PUT", path, e.keys["contoso"], map[string]any{"url": "https://hooks.example.com/x"}), http.StatusForbidden, "forbidden")
	e.expect(e.do("PUT", path, e.admin, map[string]any{"url": "http://hooks.example.com/x"}), http.StatusBadRequest, "invalid_url")
	e.expect(e.do("PUT", path, e.admin, map[string]any{"url": "https://hooks.example.com/x", "extra": 1}), http.StatusBadRequest, "unknown_field")
	e.expect(e.do("PUT", "/api/v1/tenants/nobody/webhook", e.admin, map[string]any{"url": "https://hooks.example.com/x"}), http.StatusNotFound, "not_found")
	e.expect(e.do("GET", path, e.admin, nil), http.StatusNotFound, "not_found")

	res := e.do("PUT", path, e.admin, map[string]any{"url": "https://hooks.example.com/x"})
	e.expect(res, http.StatusOK, "")
	secret, _ := res.json["secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") || field(res.json, "url") != "https://hooks.example.com/x" {
		t.Fatalf("put: %s", res.body)
	}
	res = e.do("GET", path, e.admin, nil)
	e.expect(res, http.StatusOK, "")
	if strings.Contains(string(res.body), secret[6:]) || field(res.json, "tenant") != "contoso" {
		t.Errorf("get shows the secret or the wrong tenant: %s", res.body)
	}
	res = e.do("GET", path+"/events", e.admin, nil)
	e.expect(res, http.StatusOK, "")
	if list, _ := res.json["data"].([]any); list == nil || len(list) != 0 {
		t.Errorf("events: %s", res.body)
	}
	e.expect(e.do("GET", path+"?x=1", e.admin, nil), http.StatusBadRequest, "unknown_parameter")
	e.expect(e.do("POST", path, e.admin, nil), http.StatusMethodNotAllowed, "method_not_allowed")
	e.expect(e.do("DELETE", path, e.admin, nil), http.StatusNoContent, "")
	e.expect(e.do("DELETE", path, e.admin, nil), http.StatusNotFound, "not_found")
}
