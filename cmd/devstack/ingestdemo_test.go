package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
)

// TestSeedDemo_AddsNewAliases: a demo tenant made by an older make run,
// before the ingest alias existed, is given it, keeping its key.
func TestSeedDemo_AddsNewAliases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	az := azurite.Start(t)
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: az.ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	tenants := tablestore.NewTenants(svc, "")
	old := tenant.New("contoso", "Contoso Support (demo)", time.Now())
	old.Aliases = []string{"summarize", "extract", "embed"}
	if err := tenants.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := seedDemo(ctx, az.ConnectionString(), t.TempDir(), "../../models.json", rand.Reader, time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := tenants.Get(ctx, "contoso")
	if err != nil || !got.Allows("ingest") || !got.Allows("summarize") {
		t.Errorf("contoso after make run: %+v, %v; want the ingest alias added", got.Aliases, err)
	}
}

func TestAOAILimits_TheSimulatorsQuotas(t *testing.T) {
	t.Parallel()
	var limits map[string]struct{ TPM, RPM int64 }
	if err := json.Unmarshal([]byte(aoaiLimits()), &limits); err != nil {
		t.Fatal(err)
	}
	if limits["gpt-4o-mini"].TPM != 30_000 || limits["text-embedding-3-small"].TPM != 120_000 || len(limits) != 2 {
		t.Errorf("OFFPATH_AOAI_LIMITS = %s", aoaiLimits())
	}
}
