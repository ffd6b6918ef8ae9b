package api_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/testing/entratest"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	suspendedKey := e.create("dormant", 0)
	if res := e.do("PATCH", "/api/v1/tenants/dormant", e.admin, map[string]any{"state": "suspended"}); res.status != http.StatusOK {
		t.Fatalf("suspend: %d %s", res.status, res.body)
	}
	contoso := e.keys["contoso"]
	wrong := contoso[:len(contoso)-4] + "aaaa"
	if wrong == contoso {
		wrong = contoso[:len(contoso)-4] + "bbbb"
	}
	unknown := "opk_aaaaaaaaaaaaaaaa_" + contoso[len(contoso)-52:]
	token := func(app string, mutate func(map[string]any)) string {
		c := entratest.Claims(app, now)
		if mutate != nil {
			mutate(c)
		}
		return e.signer.Token(t, c, nil)
	}

	var unauthorized []byte
	for name, cred := range map[string]string{
		"missing":              "",
		"wrong secret":         wrong,
		"unknown key":          unknown,
		"malformed key":        "opk_x",
		"garbage":              "hello",
		"entra expired":        token(appContoso, func(c map[string]any) { c["exp"] = now.Add(-2 * time.Hour).Unix() }),
		"entra wrong audience": token(appContoso, func(c map[string]any) { c["aud"] = "api://not-offpath" }),
		"entra unknown app":    token("cccccccc-0000-4000-8000-0000000000ff", nil),
		"entra forged":         entratest.New(t, "k1").Token(t, entratest.Claims(appContoso, now), nil),
		"wrong admin key":      e.admin[:len(e.admin)-4] + "aaaa",
	} {
		res := e.do("GET", "/api/v1/usage", cred, nil)
		e.expect(res, http.StatusUnauthorized, "unauthenticated")
		if res.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate", name)
		}
		// Every refusal is the same, byte for byte: nothing hints at what exists.
		if unauthorized == nil {
			unauthorized = res.body
		} else if !bytes.Equal(res.body, unauthorized) {
			t.Errorf("%s: body %s differs from %s", name, res.body, unauthorized)
		}
	}

	e.expect(e.do("GET", "/api/v1/usage", suspendedKey, nil), http.StatusForbidden, "tenant_suspended")
	for name, cred := range map[string]string{"key": contoso, "entra": token(appContoso, nil), "admin": e.admin} {
		if res := e.do("GET", "/api/v1/usage?tenant=contoso", cred, nil); res.status != http.StatusOK {
			t.Errorf("%s: %d %s", name, res.status, res.body)
		}
	}
	// The api-key header works for API keys.
	r := httptest.NewRequest("GET", "/api/v1/usage", nil)
	r.Header.Set("api-key", contoso)
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		t.Errorf("api-key header: %d %s", rec.Code, rec.Body)
	}
}

// A rotation keeps the old key working for its overlap; a rotation with no
// overlap, or a revocation, stops it at once. (The overlap's end in time is
// tested in package auth with a clock.)
func TestAuthentication_Rotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old := e.keys["contoso"]
	res := e.do("POST", "/api/v1/tenants/contoso/keys", e.admin, nil)
	e.expect(res, http.StatusCreated, "")
	second, _ := res.json["api_key"].(string)
	keys, _ := field(res.json, "tenant.keys").([]any)
	if len(keys) != 2 || field(keys[0], "expires") != now.Add(24*time.Hour).Format(time.RFC3339) || field(keys[1], "expires") != nil {
		t.Errorf("keys after rotation: %v", keys)
	}
	for _, k := range []string{old, second} {
		if res := e.do("GET", "/api/v1/usage", k, nil); res.status != http.StatusOK {
			t.Errorf("during the overlap: %d", res.status)
		}
	}
	res = e.do("POST", "/api/v1/tenants/contoso/keys", e.admin, map[string]any{"overlap": "0s"})
	e.expect(res, http.StatusCreated, "")
	third, _ := res.json["api_key"].(string)
	for k, want := range map[string]int{old: 401, second: 401, third: 200} {
		if res := e.do("GET", "/api/v1/usage", k, nil); res.status != want {
			t.Errorf("after rotation without overlap: %d, want %d", res.status, want)
		}
	}
	keyID, _ := res.json["key_id"].(string)
	e.expect(e.do("DELETE", "/api/v1/tenants/contoso/keys/"+keyID, e.admin, nil), http.StatusOK, "")
	e.expect(e.do("GET", "/api/v1/usage", third, nil), http.StatusUnauthorized, "unauthenticated")
	e.expect(e.do("DELETE", "/api/v1/tenants/contoso/keys/"+keyID, e.admin, nil), http.StatusNotFound, "not_found")
	e.expect(e.do("DELETE", "/api/v1/tenants/contoso/keys/..%2f..", e.admin, nil), http.StatusNotFound, "not_found")
	e.expect(e.do("POST", "/api/v1/tenants/contoso/keys", e.admin, map[string]any{"overlap": "-1h"}), http.StatusBadRequest, "invalid")
	e.expect(e.do("POST", "/api/v1/tenants/contoso/keys", e.admin, map[string]any{"overlap": "9999h"}), http.StatusBadRequest, "invalid")
	e.expect(e.do("POST", "/api/v1/tenants/nobody/keys", e.admin, nil), http.StatusNotFound, "not_found")
}
