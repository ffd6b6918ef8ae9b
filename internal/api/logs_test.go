package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/testing/entratest"
)

// TestLogs_HoldNoSecrets drives every kind of request, good and bad, through
// the protocol layer with logging at debug level, then looks for any
// 8-character piece of any credential's secret in the log.
func TestLogs_HoldNoSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	token := e.signer.Token(t, entratest.Claims(appContoso, now), nil)
	secrets := []string{e.keys["contoso"], e.keys["acme"], e.admin, token}
	wrong := e.keys["contoso"][:40] + strings.Repeat("a", len(e.keys["contoso"])-40)
	secrets = append(secrets, wrong)

	res := e.do("POST", "/api/v1/tenants", e.admin, map[string]any{"id": "fabrikam"})
	created, _ := res.json["api_key"].(string)
	res = e.do("POST", "/api/v1/tenants/fabrikam/keys", e.admin, map[string]any{"overlap": "1h"})
	rotated, _ := res.json["api_key"].(string)
	if created == "" || rotated == "" {
		t.Fatalf("no keys made: %s", res.body)
	}
	secrets = append(secrets, created, rotated)
	e.do("PATCH", "/api/v1/tenants/fabrikam", e.admin, map[string]any{"state": "suspended"})
	for _, cred := range append(secrets, "", "opk_short", "Basic "+e.keys["acme"]) {
		e.do("GET", "/api/v1/usage", cred, nil)
		e.do("GET", "/api/v1/usage?tenant=acme", cred, nil)
		e.do("GET", "/api/v1/usage/export?month=2026-13", cred, nil)
		e.do("GET", "/api/v1/tenants", cred, nil)
	}
	r, _ := http.NewRequest("GET", "/api/v1/usage", nil)
	r.Header.Set("api-key", e.keys["contoso"])
	r.Header.Add("Authorization", "Bearer "+e.keys["acme"])
	e.handler.ServeHTTP(discard{}, r)

	logs := e.logs.String()
	if !strings.Contains(logs, "authentication refused") || !strings.Contains(logs, `"tenant":"contoso"`) || strings.Count(logs, "\n") < 40 {
		t.Fatalf("the log does not show the requests; the test would prove nothing:\n%s", logs)
	}
	for _, s := range secrets {
		secret := s
		if strings.HasPrefix(s, "opk_") {
			secret = s[len(s)-52:] // the key id before it is the key's public name
		} else if strings.Count(s, ".") == 2 {
			secret = s[strings.LastIndex(s, ".")+1:] // a token's signature; and the token whole, below
			if strings.Contains(logs, s[:len(s)/2]) {
				t.Errorf("the log holds half a token")
			}
		}
		for i := 0; i+8 <= len(secret); i++ {
			if strings.Contains(logs, secret[i:i+8]) {
				t.Fatalf("the log holds %q, a piece of a credential's secret", secret[i:i+8])
			}
		}
	}
}

type discard struct{ h http.Header }

func (d discard) Header() http.Header {
	if d.h == nil {
		return http.Header{}
	}
	return d.h
}
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}
