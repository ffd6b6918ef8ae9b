package main

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tablestore"
)

func TestSeedDemo_IsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	az := azurite.Start(t)
	state := t.TempDir()
	now := time.Now()
	first, err := seedDemo(ctx, az.ConnectionString(), state, "../../models.json", rand.Reader, now)
	if err != nil {
		t.Fatal(err)
	}
	second, err := seedDemo(ctx, az.ConnectionString(), state, "../../models.json", rand.Reader, now)
	if err != nil {
		t.Fatalf("second make run: %v", err)
	}
	if first.keys.Admin != second.keys.Admin || first.keys.Tenants["contoso"] != second.keys.Tenants["contoso"] || first.adminDigest != auth.AdminKeyDigest(first.keys.Admin) {
		t.Errorf("keys changed between runs: %+v, %+v", first.keys, second.keys)
	}
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: az.ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	tenants := tablestore.NewTenants(svc, "")
	list, err := tenants.List(ctx)
	if err != nil || len(list) != len(demoTenants) {
		t.Fatalf("tenants after two runs: %d, %v", len(list), err)
	}
	rows, err := tablestore.NewLedger(svc, tablestore.LedgerOptions{}).Month(ctx, "contoso", first.month)
	if err != nil || len(rows) != 4 {
		t.Errorf("contoso demo rows after two runs = %d, %v; want 4", len(rows), err)
	}
	a := auth.New(auth.Options{Credentials: tenants})
	for id, key := range second.keys.Tenants {
		if p, err := a.AuthenticateCredential(ctx, key); err != nil || p.TenantID != id {
			t.Errorf("saved key of %s: %+v, %v", id, p, err)
		}
	}
	if info, err := os.Stat(filepath.Join(state, "demo-keys.json")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("demo-keys.json: %v, %v", info, err)
	}

	// The saved keys are lost (a fresh .run with old tables): new keys are
	// issued, the unknown old ones revoked.
	if err := os.Remove(filepath.Join(state, "demo-keys.json")); err != nil {
		t.Fatal(err)
	}
	third, err := seedDemo(ctx, az.ConnectionString(), state, "../../models.json", rand.Reader, now)
	if err != nil {
		t.Fatal(err)
	}
	if third.keys.Tenants["contoso"] == first.keys.Tenants["contoso"] {
		t.Error("no new key after the saved one was lost")
	}
	a.Forget()
	if _, err := a.AuthenticateCredential(ctx, first.keys.Tenants["contoso"]); err == nil {
		t.Error("the lost key still works")
	}
	if _, err := a.AuthenticateCredential(ctx, third.keys.Tenants["contoso"]); err != nil {
		t.Errorf("the new key: %v", err)
	}
}
