package api_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/offpath/offpath/internal/testing/entratest"
)

// TestIsolation: whatever contoso sends, nothing of acme's comes back.
func TestIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	contoso := e.keys["contoso"]
	token := e.signer.Token(t, entratest.Claims(appContoso, now), nil)
	tests := []struct {
		method, target string
		body           any
		status         int
	}{
		{"GET", "/api/v1/usage?tenant=acme", nil, http.StatusForbidden},
		{"GET", "/api/v1/usage?tenant=acme&month=2026-11", nil, http.StatusForbidden},
		{"GET", "/api/v1/usage?month=2026-11&tenant=%61cme", nil, http.StatusForbidden},
		{"GET", "/api/v1/usage?tenant=ACME", nil, http.StatusForbidden},
		{"GET", "/api/v1/usage?tenant=acme%00", nil, http.StatusForbidden},
		{"GET", "/api/v1/usage?tenant=acme'%20or%20''%3d'", nil, http.StatusForbidden},
		{"GET", "/api/v1/usage?tenant=nobody", nil, http.StatusForbidden},
		{"GET", "/api/v1/usage?tenant=contoso&tenant=acme", nil, http.StatusBadRequest},
		{"GET", "/api/v1/usage?tenant=acme&tenant=contoso", nil, http.StatusBadRequest},
		{"GET", "/api/v1/usage?Tenant=acme", nil, http.StatusBadRequest},
		{"GET", "/api/v1/usage?tenant_id=acme", nil, http.StatusBadRequest},
		{"GET", "/api/v1/usage?tenant[]=acme", nil, http.StatusBadRequest},
		{"GET", "/api/v1/usage;tenant=acme", nil, http.StatusNotFound},
		{"GET", "/api/v1/usage/export?tenant=acme", nil, http.StatusForbidden},
		{"GET", "/api/v1/usage/export?month=2026-11&tenant=acme", nil, http.StatusForbidden},
		{"GET", "/api/v1/usage/acme", nil, http.StatusNotFound},
		{"GET", "/api/v1/tenants", nil, http.StatusForbidden},
		{"GET", "/api/v1/tenants/acme", nil, http.StatusForbidden},
		{"GET", "/api/v1/tenants/contoso", nil, http.StatusForbidden},
		{"PATCH", "/api/v1/tenants/acme", map[string]any{"state": "suspended"}, http.StatusForbidden},
		{"POST", "/api/v1/tenants/acme/keys", nil, http.StatusForbidden},
		{"POST", "/api/v1/tenants", map[string]any{"id": "evil"}, http.StatusForbidden},
	}
	for _, cred := range []string{contoso, token} {
		for _, tt := range tests {
			res := e.do(tt.method, tt.target, cred, tt.body)
			if res.status != tt.status {
				t.Errorf("%s %s: status %d, want %d; %s", tt.method, tt.target, res.status, tt.status, res.body)
			}
			for _, marker := range []string{"777777", "acme-secret-unit", "text-embedding-3-small", "Team acme"} {
				if bytes.Contains(res.body, []byte(marker)) {
					t.Errorf("%s %s: body shows acme's %q: %s", tt.method, tt.target, marker, res.body)
				}
			}
		}
	}
	// Contoso's own usage, asked for by name, is fine.
	if res := e.do("GET", "/api/v1/usage?tenant=contoso&month=2026-11", contoso, nil); res.status != http.StatusOK || res.json["tenant"] != "contoso" {
		t.Errorf("own usage by name: %d %s", res.status, res.body)
	}
	// Acme was not suspended by contoso's attempt.
	if res := e.do("GET", "/api/v1/usage", e.keys["acme"], nil); res.status != http.StatusOK {
		t.Errorf("acme after contoso's attempts: %d %s", res.status, res.body)
	}
}

func TestUsage_AdminReadsAnyTenant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.do("GET", "/api/v1/usage?tenant=acme&month=2026-11", e.admin, nil)
	if res.status != http.StatusOK || res.json["tenant"] != "acme" || field(res.json, "total.prompt_tokens") != 777777.0 {
		t.Errorf("admin reads acme: %d %s", res.status, res.body)
	}
	e.expect(e.do("GET", "/api/v1/usage", e.admin, nil), http.StatusBadRequest, "tenant_required")
	e.expect(e.do("GET", "/api/v1/usage?tenant=nobody", e.admin, nil), http.StatusNotFound, "not_found")
	e.expect(e.do("GET", "/api/v1/usage?tenant=a/b", e.admin, nil), http.StatusBadRequest, "invalid_tenant_id")
	e.expect(e.do("GET", "/api/v1/usage/export?tenant=a'b", e.admin, nil), http.StatusBadRequest, "invalid_tenant_id")
	if res := e.do("GET", "/api/v1/usage/export?tenant=acme&month=2026-11", e.admin, nil); res.status != http.StatusOK || !bytes.Contains(res.body, []byte("777777")) {
		t.Errorf("admin export: %d %s", res.status, res.body)
	}
}
