package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/testing/entratest"
	"github.com/offpath/offpath/internal/testing/poll"
)

// instance is one handler process run in the test.
type instance struct {
	base string
	out  *syncBuffer
	stop func() error
}

// startInstance runs the handler with env (its port and app root added).
func startInstance(t *testing.T, env map[string]string) *instance {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "host.json"), []byte(`{"functionTimeout":"00:05:00"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	copyModels(t, root)
	port := freePort(t)
	full := map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": strconv.Itoa(port), "FUNCTIONS_APP_ROOT_PATH": root}
	for k, v := range env {
		full[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{base: "http://127.0.0.1:" + strconv.Itoa(port), out: &syncBuffer{}}
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return full[k] }, in.out) }()
	var once sync.Once
	var err error
	in.stop = func() error { once.Do(func() { cancel(); err = <-done }); return err }
	t.Cleanup(func() { _ = in.stop() })
	return in
}

// call sends one API request (retrying only until the instance listens).
func (in *instance) call(t *testing.T, method, path, cred, body string) (int, map[string]any) {
	t.Helper()
	var res *http.Response
	var err error
	poll.Within(10*time.Second, func() bool {
		req, _ := http.NewRequest(method, in.base+path, strings.NewReader(body))
		if cred != "" {
			req.Header.Set("Authorization", "Bearer "+cred)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err = http.DefaultClient.Do(req)
		return err == nil
	})
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	var v map[string]any
	_ = json.NewDecoder(res.Body).Decode(&v)
	return res.StatusCode, v
}

// TestRun_TenantsThroughTheHandler wires everything as in Azure, against a
// private Azurite and a loopback JWKS: the admin creates a tenant, which
// then reads its usage with its key and with an Entra ID token.
func TestRun_TenantsThroughTheHandler(t *testing.T) {
	t.Parallel()
	az := azurite.Start(t)
	adminKey, digest, err := auth.NewAdminKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer := entratest.New(t, "k1")
	in := startInstance(t, map[string]string{
		"AzureWebJobsStorage": az.ConnectionString(), "OFFPATH_ADMIN_KEY_SHA256": digest,
		"OFFPATH_ENTRA_ISSUERS": entratest.Issuer, "OFFPATH_ENTRA_AUDIENCES": entratest.Audience,
		"OFFPATH_ENTRA_JWKS_URL": entratest.Serve(t, signer),
	})
	app := "eeeeeeee-0000-4000-8000-000000000001"
	status, created := in.call(t, "POST", "/api/v1/tenants", adminKey, `{"id":"contoso","aliases":["summarize"],"app_ids":["`+app+`"]}`)
	if status != http.StatusCreated {
		t.Fatalf("create tenant: %d %v\n%s", status, created, in.out)
	}
	key, _ := created["api_key"].(string)
	if status, v := in.call(t, "GET", "/api/v1/usage?month=2026-11", key, ""); status != http.StatusOK || v["tenant"] != "contoso" {
		t.Errorf("usage with the key: %d %v", status, v)
	}
	token := signer.Token(t, entratest.Claims(app, time.Now()), nil)
	if status, v := in.call(t, "GET", "/api/v1/usage", token, ""); status != http.StatusOK || v["tenant"] != "contoso" {
		t.Errorf("usage with an Entra token: %d %v", status, v)
	}
	delegated := signer.Token(t, entratest.DelegatedClaims(app, time.Now()), nil)
	if status, _ := in.call(t, "GET", "/api/v1/usage", delegated, ""); status != http.StatusUnauthorized {
		t.Errorf("usage with a user's delegated token: %d, want 401 (application tokens only)", status)
	}
	if status, _ := in.call(t, "GET", "/api/v1/usage", "", ""); status != http.StatusUnauthorized {
		t.Errorf("usage without a credential: %d", status)
	}
	if err := in.stop(); err != nil {
		t.Fatalf("run() = %v", err)
	}
	logs := in.out.String()
	if strings.Contains(logs, key[len(key)-20:]) || strings.Contains(logs, adminKey[4:24]) || strings.Contains(logs, "AccountKey") {
		t.Errorf("the log holds a secret:\n%s", logs)
	}
}

// TestRun_RevocationReachesASecondInstance: two handler instances share
// the tenants table; a key revoked and a tenant suspended through one are
// refused by the other within OFFPATH_AUTH_REVOCATION_BOUND. Each request
// to the second instance that starts once the bound has passed since the
// change must be refused; the test ends at the first refusal.
func TestRun_RevocationReachesASecondInstance(t *testing.T) {
	t.Parallel()
	az := azurite.Start(t)
	adminKey, digest, err := auth.NewAdminKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	const bound = time.Second
	env := map[string]string{"AzureWebJobsStorage": az.ConnectionString(), "OFFPATH_ADMIN_KEY_SHA256": digest,
		"OFFPATH_AUTH_REVOCATION_BOUND": bound.String(), "OFFPATH_AUTH_CACHE_TTL": "10m"}
	first, second := startInstance(t, env), startInstance(t, env)
	for _, id := range []string{"contoso", "fabrikam"} {
		if status, _ := first.call(t, "POST", "/api/v1/tenants", adminKey, `{"id":"`+id+`","aliases":["summarize"]}`); status != http.StatusCreated {
			t.Fatalf("create %s: %d", id, status)
		}
	}
	_, rotated := first.call(t, "POST", "/api/v1/tenants/contoso/keys", adminKey, `{"overlap":"24h"}`)
	_, fab := first.call(t, "POST", "/api/v1/tenants/fabrikam/keys", adminKey, `{"overlap":"24h"}`)
	key, keyID := rotated["api_key"].(string), rotated["key_id"].(string)
	fabKey := fab["api_key"].(string)
	for _, k := range []string{key, fabKey} {
		if status, _ := second.call(t, "GET", "/api/v1/usage", k, ""); status != http.StatusOK {
			t.Fatalf("the second instance before the change: %d", status)
		}
	}
	for _, change := range []struct {
		name, method, path, body, cred string
		want                           int
	}{
		{"key revoked", "DELETE", "/api/v1/tenants/contoso/keys/" + keyID, "", key, http.StatusUnauthorized},
		{"tenant suspended", "PATCH", "/api/v1/tenants/fabrikam", `{"state":"suspended"}`, fabKey, http.StatusForbidden},
	} {
		if status, v := first.call(t, change.method, change.path, adminKey, change.body); status != http.StatusOK {
			t.Fatalf("%s through the first instance: %d %v", change.name, status, v)
		}
		changed := time.Now()
		for {
			start := time.Now()
			status, _ := second.call(t, "GET", "/api/v1/usage", change.cred, "")
			if status == change.want {
				t.Logf("%s: refused by the second instance %v after the change (bound %v)", change.name, start.Sub(changed).Round(time.Millisecond), bound)
				break
			}
			if status != http.StatusOK {
				t.Fatalf("%s: the second instance answered %d", change.name, status)
			}
			if start.Sub(changed) >= bound {
				t.Fatalf("%s: the second instance still accepted the credential %v after the change (bound %v)", change.name, start.Sub(changed), bound)
			}
		}
	}
}
