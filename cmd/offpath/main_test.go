package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/api"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tablestore"
)

// offpath runs the CLI with args and returns its output.
func offpath(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
	return out.String(), err
}

// invoke runs the CLI as main does: its stdout, stderr and exit status.
func invoke(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
	code = exitCode(err, &errOut)
	return out.String(), errOut.String(), code
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

	// Empty reports say so.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tenants", "list"}, "no tenants"},
		{[]string{"usage"}, "no tenants"},
	} {
		if out := mustRun(t, env, c.args...); !strings.Contains(out, c.want) {
			t.Errorf("offpath %v on nothing = %q, want %q", c.args, out, c.want)
		}
	}
	if out := mustRun(t, env, "tenants", "list", "-json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("tenants list -json on nothing = %q", out)
	}

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
	// A rebuild of exact rollups corrects nothing, and the report is the same.
	before := mustRun(t, env, "usage", "-tenant", "contoso", "-json")
	after, stderr, code := invoke(t, env, "usage", "-tenant", "contoso", "-json", "-rebuild")
	if code != 0 || after != before || !strings.Contains(stderr, "contoso "+m.String()+": 2 ledger rows in 2 rollups, 0 rollups corrected") {
		t.Errorf("usage -rebuild: exit %d, stderr %q\nbefore %s\nafter  %s", code, stderr, before, after)
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

	// The key as JSON, for scripts.
	var created, rotated issuedKey
	if err := json.Unmarshal([]byte(mustRun(t, env, "tenants", "create", "fabrikam", "-json")), &created); err != nil ||
		created.Tenant != "fabrikam" || !keyPattern.MatchString(created.Key) || created.KeyID == "" {
		t.Errorf("tenants create -json = %+v, %v", created, err)
	}
	if err := json.Unmarshal([]byte(mustRun(t, env, "tenants", "rotate-key", "fabrikam", "-overlap", "2h", "-json")), &rotated); err != nil ||
		!keyPattern.MatchString(rotated.Key) || rotated.Key == created.Key || rotated.OthersExpire == nil || rotated.OthersRevoked {
		t.Errorf("tenants rotate-key -json = %+v, %v", rotated, err)
	}
	var revoked issuedKey
	if err := json.Unmarshal([]byte(mustRun(t, env, "tenants", "rotate-key", "fabrikam", "-overlap", "0s", "-json")), &revoked); err != nil ||
		!revoked.OthersRevoked || revoked.OthersExpire != nil {
		t.Errorf("tenants rotate-key -overlap 0s -json = %+v, %v", revoked, err)
	}
	// The list as JSON is the API's view of a tenant (package api), dates
	// included.
	var listed []api.TenantView
	if err := json.Unmarshal([]byte(mustRun(t, env, "tenants", "list", "-json")), &listed); err != nil {
		t.Fatalf("tenants list -json: %v", err)
	}
	for _, v := range listed {
		if v.ID == "fabrikam" && (v.Created.IsZero() || v.Updated.Before(v.Created) || len(v.Keys) == 0 || v.Aliases == nil) {
			t.Errorf("tenants list -json: %+v", v)
		}
	}
	if len(listed) < 2 {
		t.Errorf("tenants list -json: %d tenants", len(listed))
	}
	// A runtime failure exits 1, with the error on stderr.
	if stdout, stderr, code := invoke(t, env, "tenants", "suspend", "nobody"); code != 1 || stdout != "" || !strings.Contains(stderr, "nobody") {
		t.Errorf("suspend nobody: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestCLI_ExitCodesAndHelp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		code int
		// stdout and stderr must contain these.
		stdout, stderr string
	}{
		{[]string{"-h"}, 0, "tenants rotate-key", ""},
		{[]string{"--help"}, 0, "batches wait", ""},
		{[]string{"batches", "-h"}, 0, "submit, list, get, wait, results, cancel", ""},
		{[]string{"batches", "wait", "-h"}, 0, "Usage: offpath batches wait ID", ""},
		{[]string{"batches", "submit", "--help"}, 0, "-input-blob", ""},
		{[]string{"help"}, 0, "Commands:", ""},
		{[]string{"--version"}, 0, "offpath ", ""},
		{[]string{"tenants", "-h"}, 0, "create, list, suspend, activate, rotate-key", ""},
		{[]string{"tenants", "create", "-h"}, 0, "Usage: offpath tenants create ID", ""},
		{[]string{"tenants", "create", "--help"}, 0, "-budget", ""},
		{[]string{"usage", "-h"}, 0, "-month", ""},
		{[]string{"documents", "reprocess", "-h"}, 0, "Usage: offpath documents reprocess TENANT/PATH", ""},
		{[]string{"sizing", "-h"}, 0, "-tokens-per-document", ""},

		{[]string{}, 2, "", "no command"},
		{[]string{"nope"}, 2, "", `unknown command "nope"`},
		{[]string{"-nope"}, 2, "", "flag provided but not defined: -nope"},
		{[]string{"tenants"}, 2, "", "want a subcommand"},
		{[]string{"tenants", "nope"}, 2, "", `unknown command "nope"`},
		{[]string{"tenants", "create"}, 2, "", "want exactly one tenant id"},
		{[]string{"tenants", "create", "-bogus", "x"}, 2, "", "Usage: offpath tenants create"},
		{[]string{"tenants", "create", "x", "-aliases", "gpt-9"}, 2, "", "not in the model catalog"},
		{[]string{"tenants", "rotate-key", "x", "-overlap", "-1h"}, 2, "", "want 0s or more"},
		{[]string{"tenants", "list"}, 2, "", "no storage: pass -storage"},
		{[]string{"tenants", "suspend"}, 2, "", "want exactly one tenant id"},
		{[]string{"models", "extra"}, 2, "", "models takes no arguments"},
		{[]string{"usage", "-month", "2026-13"}, 2, "", "usage -month"},
		{[]string{"usage", "-tenant", "a'b"}, 2, "", "usage -tenant"},
		{[]string{"usage", "-csv", "-json"}, 2, "", "choose one"},
		{[]string{"documents", "list", "-state", "finished"}, 2, "", `state "finished": want one of queued, processing`},
		{[]string{"documents", "list", "-limit", "0"}, 2, "", "-limit 0"},
		{[]string{"documents", "list", "a'b"}, 2, "", "documents list takes no arguments"},
		{[]string{"documents", "list", "-admin", "-tenant", "a'b"}, 2, "", "documents list -tenant"},
		{[]string{"documents", "reprocess", "acme/a.txt"}, 2, "", "missing -key (or OFFPATH_ADMIN_KEY)"},
		{[]string{"sizing"}, 2, "", "missing -tokens-per-document"},
		{[]string{"sizing", "-tokens-per-document", "10", "-pool", "ec2"}, 2, "", `-pool "ec2"`},
	} {
		stdout, stderr, code := invoke(t, nil, c.args...)
		if code != c.code || !strings.Contains(stdout, c.stdout) || !strings.Contains(stderr, c.stderr) {
			t.Errorf("offpath %q: exit %d (want %d)\nstdout: %s\nstderr: %s", c.args, code, c.code, stdout, stderr)
		}
		if c.code != 0 && stdout != "" {
			t.Errorf("offpath %q failed but wrote to stdout: %s", c.args, stdout)
		}
	}
}

// TestCLI_AnyDirectory runs models and sizing away from the repository:
// the catalog and the deployments are built in, files are flags.
func TestCLI_AnyDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	out := mustRun(t, nil, "models", "-json")
	var aliases []map[string]any
	if err := json.Unmarshal([]byte(out), &aliases); err != nil || len(aliases) == 0 {
		t.Errorf("models -json elsewhere: %v\n%s", err, out)
	}
	out = mustRun(t, nil, "sizing", "-tokens-per-document", "4000", "-json")
	var plan map[string]any
	if err := json.Unmarshal([]byte(out), &plan); err != nil || plan["max_replica_count"] == nil {
		t.Errorf("sizing -json elsewhere: %v\n%s", err, out)
	}
	if _, err := offpath(t, nil, "-models", "nowhere.json", "models"); err == nil || !strings.Contains(err.Error(), "nowhere.json") {
		t.Errorf("-models nowhere.json: %v", err)
	}
	if _, err := offpath(t, nil, "sizing", "-tokens-per-document", "4000", "-deployments", "nowhere.json"); err == nil || !strings.Contains(err.Error(), "nowhere.json") {
		t.Errorf("-deployments nowhere.json: %v", err)
	}
	if _, err := offpath(t, nil, "sizing", "-tokens-per-document", "4000", "-write"); err == nil || !strings.Contains(err.Error(), "-infra") {
		t.Errorf("sizing -write elsewhere: %v", err)
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

// An alias with several batch deployments: models lists them cheapest
// first with their quotas and zones, and sizing -batch derives the quota
// setting from the quotas the catalog states.
func TestCLI_BatchDeployments(t *testing.T) {
	t.Parallel()
	price := func(in, out string) string {
		return `"price":{"input_per_1m":` + in + `,"cached_input_per_1m":0,"output_per_1m":` + out + `}`
	}
	models := `{"version":1,"aliases":{"summarize":{"batch":[
		{"deployment":"mini-batch-eu",` + price("0.1", "0.4") + `,"enqueued_token_quota":30000000,"data_zone":"eu"},
		{"deployment":"mini-batch",` + price("0.075", "0.3") + `,"enqueued_token_quota":1000000000},
		{"deployment":"mini-batch-b",` + price("0.075", "0.3") + `}]}}}`
	env := map[string]string{"OFFPATH_MODELS": models}
	out := mustRun(t, env, "models")
	first, eu := strings.Index(out, "mini-batch "), strings.Index(out, "mini-batch-eu")
	if first < 0 || eu < first || !strings.Contains(out, "1,000,000,000  global") || !strings.Contains(out, "30,000,000  eu") {
		t.Errorf("models: want the cheapest first, with quotas and zones:\n%s", out)
	}
	out = mustRun(t, env, "sizing", "-batch")
	for _, want := range []string{"OFFPATH_BATCH_QUOTA=mini-batch=900000000,mini-batch-eu=27000000", "mini-batch-b states no enqueued_token_quota"} {
		if !strings.Contains(out, want) {
			t.Errorf("sizing -batch lacks %q:\n%s", want, out)
		}
	}
	out = mustRun(t, env, "sizing", "-batch", "-batch-utilisation", "0.5", "-json")
	var plan struct {
		Setting string `json:"setting"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil || plan.Setting != "mini-batch=500000000,mini-batch-eu=15000000" {
		t.Errorf("sizing -batch -json: %v\n%s", err, out)
	}
	if _, err := offpath(t, env, "sizing", "-batch", "-batch-utilisation", "1.5"); err == nil || !strings.Contains(err.Error(), "utilisation") {
		t.Errorf("sizing -batch -batch-utilisation 1.5: %v", err)
	}
}

// A tenant's data zone, set at creation or later: the list shows it, an
// alias without a deployment in the zone is named, a malformed zone is
// refused and changes nothing.
func TestCLI_TenantDataZone(t *testing.T) {
	t.Parallel()
	price := `"price":{"input_per_1m":0.1,"cached_input_per_1m":0,"output_per_1m":0.4}`
	models := `{"version":1,"aliases":{
		"summarize":{"batch":[{"deployment":"mini-batch-eu",` + price + `,"data_zone":"eu"},{"deployment":"mini-batch",` + price + `}]},
		"rescore":{"batch":[{"deployment":"big-batch",` + price + `}]}}}`
	env := map[string]string{"OFFPATH_MODELS": models, "AzureWebJobsStorage": azurite.Start(t).ConnectionString()}

	out := mustRun(t, env, "tenants", "create", "contoso", "-aliases", "summarize,rescore", "-data-zone", "eu")
	if !strings.Contains(out, "alias rescore has no Global Batch deployment in data zone eu") || strings.Contains(out, "alias summarize") {
		t.Errorf("create -data-zone eu: want a note on rescore only:\n%s", out)
	}
	if out := mustRun(t, env, "tenants", "list"); !regexp.MustCompile(`contoso\s+-\s+active\s+summarize,rescore\s+eu\s`).MatchString(out) {
		t.Errorf("tenants list lacks the zone:\n%s", out)
	}
	if out, err := offpath(t, env, "tenants", "data-zone", "contoso", "Europe!"); err == nil {
		t.Errorf("a malformed zone was accepted:\n%s", out)
	}
	if out := mustRun(t, env, "tenants", "list"); !regexp.MustCompile(`active\s+summarize,rescore\s+eu\s`).MatchString(out) {
		t.Errorf("a refused change changed the zone:\n%s", out)
	}
	if out := mustRun(t, env, "tenants", "data-zone", "contoso", "none"); !strings.Contains(out, "data zone any") || strings.Contains(out, "note:") {
		t.Errorf("data-zone none:\n%s", out)
	}
	if out := mustRun(t, env, "tenants", "list"); !regexp.MustCompile(`active\s+summarize,rescore\s+-\s`).MatchString(out) {
		t.Errorf("the zone was not cleared:\n%s", out)
	}
	if _, err := offpath(t, env, "tenants", "data-zone", "ghost", "eu"); err == nil {
		t.Error("data-zone of a tenant that does not exist: no error")
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
		func(string) string { return "" }, &out, io.Discard)
	if err != nil {
		t.Fatalf("sizing: %v\n%s", err, out.String())
	}
	// infra/README.md's worked example: 1M TPM, 4,000 tokens per call, 8 s → 6 replicas of 4.
	for _, want := range []string{"maxReplicaCount", " 6\n", "maxConcurrentCalls", "tokens"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("sizing output lacks %q:\n%s", want, out.String())
		}
	}
	if err := run(context.Background(), []string{"sizing", "-tpm", "1000"}, func(string) string { return "" }, &out, io.Discard); err == nil {
		t.Error("sizing without -tokens-per-document: no error")
	}
}
