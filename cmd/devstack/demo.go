package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
)

// demoTenant is a tenant make run creates for trying the API.
type demoTenant struct {
	ID, Name string
	Aliases  []string
	Budget   int64
}

var demoTenants = []demoTenant{
	{ID: "contoso", Name: "Contoso Support (demo)", Aliases: []string{"summarize", "extract", "embed", "ingest"}, Budget: 50_000_000},
	{ID: "fabrikam", Name: "Fabrikam Legal (demo)", Aliases: []string{"summarize"}},
	// The nightly ticket summaries run for this one (OFFPATH_TICKETS_TENANT).
	{ID: "support", Name: "Support operations (nightly summaries)", Aliases: []string{"summarize"}},
}

// demoKeys are the demo credentials, kept in the state folder (local only,
// mode 0600) so that every make run can print them: the tables hold only
// hashes.
type demoKeys struct {
	Admin   string            `json:"admin_key"`
	Tenants map[string]string `json:"tenants"`
}

// demo is what seeding leaves for the banner.
type demo struct {
	keys        demoKeys
	adminDigest string
	month       ledger.Month
	file        string
}

// seedDemo makes sure the demo tenants exist with keys we know, and writes
// a few clearly labelled demo ledger rows (unit "demo/…") for this month.
// It is idempotent: a second make run finds the tenants and rows and
// changes nothing, except to issue a new key if the saved one was lost.
func seedDemo(ctx context.Context, conn, stateDir, modelsFile string, rand io.Reader, now time.Time) (demo, error) {
	d := demo{file: filepath.Join(stateDir, "demo-keys.json"), month: ledger.MonthOf(now)}
	if b, err := os.ReadFile(d.file); err == nil {
		_ = json.Unmarshal(b, &d.keys)
	}
	if d.keys.Tenants == nil {
		d.keys.Tenants = map[string]string{}
	}
	if !auth.IsAdminKey(d.keys.Admin) {
		key, _, err := auth.NewAdminKey(rand)
		if err != nil {
			return demo{}, err
		}
		d.keys.Admin = key
	}
	d.adminDigest = auth.AdminKeyDigest(d.keys.Admin)

	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: conn})
	if err != nil {
		return demo{}, err
	}
	tenants := tablestore.NewTenants(svc, "")
	for _, dt := range demoTenants {
		key, err := ensureTenant(ctx, tenants, dt, d.keys.Tenants[dt.ID], rand, now)
		if err != nil {
			return demo{}, fmt.Errorf("demo tenant %s: %w", dt.ID, err)
		}
		d.keys.Tenants[dt.ID] = key
	}
	b, _ := json.MarshalIndent(d.keys, "", "  ")
	if err := os.WriteFile(d.file, b, 0o600); err != nil {
		return demo{}, fmt.Errorf("save demo keys: %w", err)
	}

	modelsDoc, err := os.ReadFile(modelsFile)
	if err != nil {
		return demo{}, fmt.Errorf("demo usage: %w", err)
	}
	cat, err := catalog.Parse(modelsDoc)
	if err != nil {
		return demo{}, fmt.Errorf("demo usage: %s: %w", modelsFile, err)
	}
	entries := demoUsage(d.month)
	for i := range entries {
		if err := entries[i].Estimate(cat); err != nil {
			return demo{}, fmt.Errorf("demo usage: %w", err)
		}
	}
	if err := tablestore.NewLedger(svc, tablestore.LedgerOptions{}).RecordBatch(ctx, entries); err != nil {
		return demo{}, fmt.Errorf("demo usage: %w", err)
	}
	return d, nil
}

// ensureTenant creates the demo tenant, or finds it; it returns a working
// key: the saved one if it still works, else a new one (the others revoked).
func ensureTenant(ctx context.Context, s *tablestore.Tenants, dt demoTenant, saved string, rand io.Reader, now time.Time) (string, error) {
	t, err := s.Get(ctx, dt.ID)
	if errors.Is(err, tenant.ErrNotFound) {
		t = tenant.New(dt.ID, dt.Name, now)
		t.Aliases, t.MonthlyTokenBudget = dt.Aliases, dt.Budget
		key, _, err := t.RotateKey(rand, now, 0)
		if err != nil {
			return "", err
		}
		if err := s.Create(ctx, t); err != nil && !errors.Is(err, tenant.ErrConflict) {
			return "", err
		}
		return key, nil
	}
	if err != nil {
		return "", err
	}
	if missing := slices.DeleteFunc(slices.Clone(dt.Aliases), t.Allows); len(missing) > 0 {
		// An older make run made it before the alias existed.
		if t, err = s.Update(ctx, dt.ID, func(t *tenant.Tenant) error {
			t.Aliases = append(t.Aliases, missing...)
			return nil
		}); err != nil {
			return "", err
		}
	}
	if works(t, saved, now) {
		return saved, nil
	}
	var key string
	_, err = s.Update(ctx, dt.ID, func(t *tenant.Tenant) error {
		var err error
		key, _, err = t.RotateKey(rand, now, 0)
		return err
	})
	return key, err
}

func works(t tenant.Tenant, key string, now time.Time) bool {
	id, secret, ok := tenant.ParseKey(key)
	if !ok {
		return false
	}
	for _, k := range t.Keys {
		if k.ID == id && k.Verify(secret) && k.ActiveAt(now) {
			return true
		}
	}
	return false
}

// demoUsage is made-up usage for the month, so that the usage API and
// offpath usage have something to show. Unit keys start with "demo/".
func demoUsage(m ledger.Month) []ledger.Entry {
	e := func(tenantID string, path ledger.Path, alias, deployment, unit string, prompt, cached, completion, requests, refusals int64) ledger.Entry {
		return ledger.Entry{Tenant: tenantID, Month: m, Path: path, Unit: "demo/" + unit, Alias: alias, Deployment: deployment,
			Usage: ledger.Usage{PromptTokens: prompt, CachedTokens: cached, CompletionTokens: completion, Requests: requests, Refusals: refusals}}
	}
	return []ledger.Entry{
		e("contoso", ledger.Queue, "summarize", "gpt-4o-mini", "ticket-1001", 3_200, 0, 410, 1, 0),
		e("contoso", ledger.Queue, "summarize", "gpt-4o-mini", "ticket-1002", 2_750, 1_024, 380, 1, 0),
		e("contoso", ledger.Queue, "embed", "text-embedding-3-small", "kb-article-17", 8_192, 0, 0, 4, 0),
		e("contoso", ledger.Batch, "summarize", "gpt-4o-mini-batch", "nightly-summaries", 1_840_000, 210_000, 236_000, 1_200, 3),
		e("fabrikam", ledger.Batch, "summarize", "gpt-4o-mini-batch", "contract-review", 612_000, 0, 88_000, 400, 0),
	}
}

// showUsage reads contoso's usage through the dev host with its key: the
// whole chain, authentication and the ledger included.
func showUsage(ctx context.Context, w io.Writer, n int, hostURL, functionKey, apiKey string) error {
	done := step(w, n, "contoso's usage this month: GET /api/v1/usage")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hostURL+"/api/v1/usage", nil)
	if err != nil {
		return err
	}
	req.Header.Set("x-functions-key", functionKey)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var v ledger.ReportView
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil || res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /api/v1/usage: status %d, %v", res.StatusCode, err)
	}
	done("%d OK: %s, %d lines, %d tokens, $%s estimated", res.StatusCode, v.Month, len(v.Lines), v.Total.TotalTokens, v.Total.Cost.Dollars())
	return nil
}
