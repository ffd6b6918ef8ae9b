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
	"testing"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/azurite"
	"github.com/offpath/offpath/internal/entra/entratest"
)

// TestRun_TenantsThroughTheHandler wires everything as in Azure, against a
// private Azurite and a loopback JWKS: the admin creates a tenant, which
// then reads its usage with its key and with an Entra ID token.
func TestRun_TenantsThroughTheHandler(t *testing.T) {
	t.Parallel()
	az := azurite.Start(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "host.json"), []byte(`{"functionTimeout":"00:05:00"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	copyModels(t, root)
	adminKey, digest, err := auth.NewAdminKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer := entratest.New(t, "k1")
	port := freePort(t)
	env := map[string]string{
		"FUNCTIONS_CUSTOMHANDLER_PORT": strconv.Itoa(port), "FUNCTIONS_APP_ROOT_PATH": root,
		"AzureWebJobsStorage": az.ConnectionString(), "OFFPATH_ADMIN_KEY_SHA256": digest,
		"OFFPATH_ENTRA_ISSUERS": entratest.Issuer, "OFFPATH_ENTRA_AUDIENCES": entratest.Audience,
		"OFFPATH_ENTRA_JWKS_URL": entratest.Serve(t, signer),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }, out) }()
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	call := func(method, path, cred, body string) (int, map[string]any) {
		t.Helper()
		var res *http.Response
		deadline := time.Now().Add(10 * time.Second)
		for {
			req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
			if cred != "" {
				req.Header.Set("Authorization", "Bearer "+cred)
			}
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			if res, err = http.DefaultClient.Do(req); err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(res.Body).Decode(&v)
		return res.StatusCode, v
	}

	app := "eeeeeeee-0000-4000-8000-000000000001"
	status, created := call("POST", "/api/v1/tenants", adminKey, `{"id":"contoso","aliases":["summarize"],"app_ids":["`+app+`"]}`)
	if status != http.StatusCreated {
		t.Fatalf("create tenant: %d %v\n%s", status, created, out)
	}
	key, _ := created["api_key"].(string)
	if status, v := call("GET", "/api/v1/usage?month=2026-11", key, ""); status != http.StatusOK || v["tenant"] != "contoso" {
		t.Errorf("usage with the key: %d %v", status, v)
	}
	token := signer.Token(t, entratest.Claims(app, time.Now()), nil)
	if status, v := call("GET", "/api/v1/usage", token, ""); status != http.StatusOK || v["tenant"] != "contoso" {
		t.Errorf("usage with an Entra token: %d %v", status, v)
	}
	if status, _ := call("GET", "/api/v1/usage", "", ""); status != http.StatusUnauthorized {
		t.Errorf("usage without a credential: %d", status)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run() = %v", err)
	}
	logs := out.String()
	if strings.Contains(logs, key[len(key)-20:]) || strings.Contains(logs, adminKey[4:24]) || strings.Contains(logs, "AccountKey") {
		t.Errorf("the log holds a secret:\n%s", logs)
	}
}
