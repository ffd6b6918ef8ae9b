package api_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

func TestTenants_Admin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.do("POST", "/api/v1/tenants", e.admin, map[string]any{
		"id": "fabrikam", "display_name": "Fabrikam Legal", "aliases": []string{"summarize"}, "monthly_token_budget": 2_000_000,
		"app_ids": []string{"dddddddd-0000-4000-8000-000000000001"},
	})
	e.expect(res, http.StatusCreated, "")
	key, _ := res.json["api_key"].(string)
	if !strings.HasPrefix(key, "opk_") || res.header.Get("Location") != "/api/v1/tenants/fabrikam" ||
		field(res.json, "tenant.state") != "active" || field(res.json, "tenant.monthly_token_budget") != 2e6 {
		t.Fatalf("create: %s", res.body)
	}
	// The key works at once; it is never shown again, nor its hash.
	e.expect(e.do("GET", "/api/v1/usage", key, nil), http.StatusOK, "")
	for _, target := range []string{"/api/v1/tenants/fabrikam", "/api/v1/tenants"} {
		res := e.do("GET", target, e.admin, nil)
		e.expect(res, http.StatusOK, "")
		for _, secret := range []string{key, key[len(key)-52:], "hash", "salt"} {
			if bytes.Contains(bytes.ToLower(res.body), []byte(secret)) {
				t.Errorf("GET %s shows %q: %s", target, secret, res.body)
			}
		}
	}
	res = e.do("GET", "/api/v1/tenants", e.admin, nil)
	list, _ := res.json["tenants"].([]any)
	if len(list) != 3 || field(list[0], "id") != "acme" || field(list[2], "id") != "fabrikam" {
		t.Errorf("list: %s", res.body)
	}

	e.expect(e.do("POST", "/api/v1/tenants", e.admin, map[string]any{"id": "fabrikam"}), http.StatusConflict, "conflict")
	e.expect(e.do("POST", "/api/v1/tenants", e.admin, map[string]any{"id": "other", "app_ids": []string{appContoso}}), http.StatusConflict, "conflict")
	e.expect(e.do("POST", "/api/v1/tenants", e.admin, map[string]any{"id": "other", "aliases": []string{"gpt-5"}}), http.StatusBadRequest, "unknown_alias")
	e.expect(e.do("POST", "/api/v1/tenants", e.admin, map[string]any{"id": "other", "monthly_token_budget": -5}), http.StatusBadRequest, "invalid")
	e.expect(e.do("POST", "/api/v1/tenants", e.admin, map[string]any{"id": "other", "app_ids": []string{"not-a-guid"}}), http.StatusBadRequest, "invalid")
	e.expect(e.do("GET", "/api/v1/tenants/other", e.admin, nil), http.StatusNotFound, "not_found")

	// PATCH changes what it names and nothing else.
	res = e.do("PATCH", "/api/v1/tenants/fabrikam", e.admin, map[string]any{"display_name": "Fabrikam", "monthly_token_budget": 0})
	e.expect(res, http.StatusOK, "")
	if res.json["display_name"] != "Fabrikam" || res.json["monthly_token_budget"] != 0.0 || field(res.json, "aliases") == nil || len(res.json["aliases"].([]any)) != 1 {
		t.Errorf("patch: %s", res.body)
	}
	// Suspension applies at once on this instance.
	e.expect(e.do("PATCH", "/api/v1/tenants/fabrikam", e.admin, map[string]any{"state": "suspended"}), http.StatusOK, "")
	e.expect(e.do("GET", "/api/v1/usage", key, nil), http.StatusForbidden, "tenant_suspended")
	e.expect(e.do("PATCH", "/api/v1/tenants/fabrikam", e.admin, map[string]any{"state": "active"}), http.StatusOK, "")
	e.expect(e.do("GET", "/api/v1/usage", key, nil), http.StatusOK, "")

	// A data zone keeps the tenant's batch work on deployments of that zone;
	// a malformed one is refused, and "" lifts the requirement.
	if res = e.do("PATCH", "/api/v1/tenants/fabrikam", e.admin, map[string]any{"data_zone": "eu"}); res.json["data_zone"] != "eu" {
		t.Errorf("patch data_zone: %s", res.body)
	}
	if res = e.do("GET", "/api/v1/tenants/fabrikam", e.admin, nil); res.json["data_zone"] != "eu" {
		t.Errorf("data_zone not stored: %s", res.body)
	}
	e.expect(e.do("PATCH", "/api/v1/tenants/fabrikam", e.admin, map[string]any{"data_zone": "EU west"}), http.StatusBadRequest, "invalid")
	e.expect(e.do("POST", "/api/v1/tenants", e.admin, map[string]any{"id": "other", "data_zone": "e"}), http.StatusBadRequest, "invalid")
	if res = e.do("PATCH", "/api/v1/tenants/fabrikam", e.admin, map[string]any{"data_zone": ""}); res.json["data_zone"] != nil {
		t.Errorf("data_zone not lifted: %s", res.body)
	}
	e.expect(e.do("PATCH", "/api/v1/tenants/fabrikam", e.admin, map[string]any{"state": "deleted"}), http.StatusBadRequest, "invalid")
	e.expect(e.do("PATCH", "/api/v1/tenants/fabrikam", e.admin, map[string]any{"id": "renamed"}), http.StatusBadRequest, "unknown_field")
	e.expect(e.do("PATCH", "/api/v1/tenants/fabrikam", e.admin, map[string]any{"app_ids": []string{appAcme}}), http.StatusConflict, "conflict")
	e.expect(e.do("PATCH", "/api/v1/tenants/fabrikam", e.admin, map[string]any{"aliases": []string{"nope"}}), http.StatusBadRequest, "unknown_alias")
	e.expect(e.do("PATCH", "/api/v1/tenants/nobody", e.admin, map[string]any{"display_name": "x"}), http.StatusNotFound, "not_found")
	e.expect(e.do("PUT", "/api/v1/tenants/fabrikam", e.admin, map[string]any{}), http.StatusMethodNotAllowed, "method_not_allowed")
	e.expect(e.do("DELETE", "/api/v1/tenants", e.admin, nil), http.StatusMethodNotAllowed, "method_not_allowed")
}
