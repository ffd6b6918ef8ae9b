package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/azurite"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tablestore"
)

// offpath runs the CLI with args and returns its output.
func offpath(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), append([]string{"-models", "../../models.json"}, args...), func(k string) string { return env[k] }, &out)
	return out.String(), err
}

func mustRun(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	out, err := offpath(t, env, args...)
	if err != nil {
		t.Fatalf("offpath %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

var keyPattern = regexp.MustCompile(`opk_[a-z2-7]{16}_[a-z2-7]{52}`)

func TestCLI_TenantsAndUsage(t *testing.T) {
	t.Parallel()
	az := azurite.Start(t)
	env := map[string]string{"AzureWebJobsStorage": az.ConnectionString()}

	out := mustRun(t, env, "tenants", "create", "contoso", "-name", "Contoso Support", "-aliases", "summarize,embed", "-budget", "1000000")
	key := keyPattern.FindString(out)
	if key == "" {
		t.Fatalf("create printed no key:\n%s", out)
	}
	mustRun(t, env, "tenants", "create", "-aliases", "summarize", "acme")
	if out, err := offpath(t, env, "tenants", "create", "contoso"); err == nil {
		t.Errorf("creating contoso twice: no error\n%s", out)
	}
	if _, err := offpath(t, env, "tenants", "create", "bad/id"); err == nil {
		t.Error("create bad/id: no error")
	}
	if _, err := offpath(t, env, "tenants", "create", "other", "-aliases", "gpt-9"); err == nil || !strings.Contains(err.Error(), "not in the model catalog") {
		t.Errorf("unknown alias: %v", err)
	}

	out = mustRun(t, env, "tenants", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "acme ") || !strings.Contains(lines[2], "1,000,000") || !strings.Contains(lines[2], "Contoso Support") {
		t.Errorf("tenants list:\n%s", out)
	}
	if strings.Contains(out, key[len(key)-52:]) {
		t.Error("tenants list shows a key's secret")
	}

	// Usage: demo rows written the way the ledger's writers write them.
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: az.ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	m := ledger.MonthOf(time.Now())
	cat, _ := catalog.Parse(mustRead(t, "../../models.json"))
	var entries []ledger.Entry
	for i, e := range []ledger.Entry{
		{Tenant: "contoso", Path: ledger.Queue, Alias: "summarize", Deployment: "gpt-4o-mini", Usage: ledger.Usage{PromptTokens: 1_234_567, CompletionTokens: 89_000, Requests: 12}},
		{Tenant: "contoso", Path: ledger.Batch, Alias: "summarize", Deployment: "gpt-4o-mini-batch", Usage: ledger.Usage{PromptTokens: 5000, CompletionTokens: 100, Requests: 3, Refusals: 1}},
		{Tenant: "acme", Path: ledger.Queue, Alias: "embed", Deployment: "text-embedding-3-small", Usage: ledger.Usage{PromptTokens: 42, Requests: 1}},
	} {
		e.Month, e.Unit = m, "unit-"+string(rune('a'+i))
		if err := e.Estimate(cat); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	if err := tablestore.NewLedger(svc, tablestore.LedgerOptions{}).RecordBatch(context.Background(), entries); err != nil {
		t.Fatal(err)
	}

	out = mustRun(t, env, "usage")
	for _, want := range []string{"1,234,567", "gpt-4o-mini-batch", "all tenants", "% of budget 1,000,000", m.String()} {
		if !strings.Contains(out, want) {
			t.Errorf("usage table lacks %q:\n%s", want, out)
		}
	}
	// The table is aligned: every row is as wide as the header.
	rows := strings.Split(strings.TrimSpace(out), "\n")
	for _, r := range rows[1:5] {
		if len(strings.TrimRight(r, " ")) != len(strings.TrimRight(rows[0], " ")) {
			t.Errorf("row not aligned with the header:\n%s\n%s", rows[0], r)
		}
	}

	out = mustRun(t, env, "usage", "-tenant", "contoso", "-month", m.String(), "--csv")
	records, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(records) != 3 || records[0][0] != "tenant" || records[2][5] != "1234567" {
		t.Errorf("usage --csv = %v, %v\n%s", records, err, out)
	}
	out = mustRun(t, env, "usage", "-tenant", "acme", "--json")
	var views []ledger.ReportView
	if err := json.Unmarshal([]byte(out), &views); err != nil || len(views) != 1 || views[0].Total.PromptTokens != 42 {
		t.Errorf("usage --json = %+v, %v\n%s", views, err, out)
	}
	if out := mustRun(t, env, "usage", "-tenant", "acme", "-month", "2020-01"); !strings.Contains(out, "no usage") {
		t.Errorf("empty month:\n%s", out)
	}
	for _, bad := range [][]string{{"usage", "-month", "2026-13"}, {"usage", "-tenant", "a'b"}, {"usage", "-tenant", "nobody"}, {"usage", "-csv", "-json"}} {
		if _, err := offpath(t, env, bad...); err == nil {
			t.Errorf("offpath %v: no error", bad)
		}
	}

	// Suspend, activate, rotate.
	if out := mustRun(t, env, "tenants", "suspend", "acme"); !strings.Contains(out, "suspended") {
		t.Errorf("suspend: %s", out)
	}
	if out := mustRun(t, env, "tenants", "list"); !strings.Contains(out, "acme  -     suspended") && !regexp.MustCompile(`acme\s+-\s+suspended`).MatchString(out) {
		t.Errorf("list after suspend:\n%s", out)
	}
	mustRun(t, env, "tenants", "activate", "acme")
	out = mustRun(t, env, "tenants", "rotate-key", "contoso", "-overlap", "1h")
	if k := keyPattern.FindString(out); k == "" || k == key || !strings.Contains(out, "previous keys work until") {
		t.Errorf("rotate-key:\n%s", out)
	}
	if out := mustRun(t, env, "tenants", "list"); !strings.Contains(out, "2 (one expires") {
		t.Errorf("list after rotation:\n%s", out)
	}
	if _, err := offpath(t, env, "tenants", "suspend", "nobody"); err == nil {
		t.Error("suspend nobody: no error")
	}
}

func TestCLI_ModelsAndAdminKey(t *testing.T) {
	t.Parallel()
	out := mustRun(t, nil, "models")
	for _, want := range []string{"summarize  queue  gpt-4o-mini", "summarize  batch  gpt-4o-mini-batch", "0.075", "embed", "ingest     queue  text-embedding-3-small"} {
		if !strings.Contains(out, want) {
			t.Errorf("models lacks %q:\n%s", want, out)
		}
	}
	out = mustRun(t, nil, "models", "-json")
	var aliases []map[string]any
	if err := json.Unmarshal([]byte(out), &aliases); err != nil || len(aliases) != 4 {
		t.Errorf("models -json: %v\n%s", err, out)
	}
	out = mustRun(t, nil, "admin-key")
	if !regexp.MustCompile(`opa_[a-z2-7]{52}`).MatchString(out) || !regexp.MustCompile(`OFFPATH_ADMIN_KEY_SHA256=[0-9a-f]{64}`).MatchString(out) {
		t.Errorf("admin-key:\n%s", out)
	}
	if _, err := offpath(t, map[string]string{"OFFPATH_MODELS": `{"version":1}`}, "models"); err == nil || !strings.Contains(err.Error(), "aliases") {
		t.Errorf("bad OFFPATH_MODELS: %v", err)
	}
}

func TestCLI_Errors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"nope"}, {"tenants"}, {"tenants", "nope"}, {"tenants", "list"}, {"tenants", "suspend"}, {"models", "extra"}} {
		if _, err := offpath(t, nil, args...); err == nil {
			t.Errorf("offpath %v: no error", args)
		}
	}
	if _, err := offpath(t, nil, "tenants", "list"); err == nil || !strings.Contains(err.Error(), "no storage") {
		t.Errorf("no storage: %v", err)
	}
	if _, err := offpath(t, nil, "usage", "-h"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("usage -h: %v", err)
	}
	if out := mustRun(t, nil, "help"); !strings.Contains(out, "tenants rotate-key") {
		t.Errorf("help:\n%s", out)
	}
}

func TestThousands(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRun_Sizing(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	err := run(context.Background(), []string{"sizing", "-tpm", "1000000", "-rpm", "6000", "-tokens-per-document", "4000", "-latency", "8"},
		func(string) string { return "" }, &out)
	if err != nil {
		t.Fatalf("sizing: %v\n%s", err, out.String())
	}
	// The reference's worked example: 1M TPM, 4,000 tokens per call, 8 s → 6 replicas of 4.
	for _, want := range []string{"maxReplicaCount", " 6\n", "maxConcurrentCalls", "tokens"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("sizing output lacks %q:\n%s", want, out.String())
		}
	}
	if err := run(context.Background(), []string{"sizing", "-tpm", "1000"}, func(string) string { return "" }, &out); err == nil {
		t.Error("sizing without -tokens-per-document: no error")
	}
}
