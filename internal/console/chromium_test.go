package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/offpath/offpath/internal/audit"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/apptest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	apptest.Cleanup()
	os.Exit(code)
}

// need finds what the browser test needs, or skips (fails with CI set).
func need(t *testing.T) (chromium, node, root string) {
	t.Helper()
	missing := func(msg string) {
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (CI is set, so the browser test may not be skipped)")
		}
		t.Skip(msg)
	}
	chromium = os.Getenv("CHROMIUM")
	for _, name := range []string{"chromium", "chromium-browser"} {
		if chromium != "" {
			break
		}
		chromium, _ = exec.LookPath(name)
	}
	if chromium == "" {
		missing("chromium not found: run scripts/ensure-chromium (as root, it installs Debian's chromium) or set CHROMIUM")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node not found")
	}
	root, err = filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "playwright-core", "package.json")); err != nil {
		missing("playwright-core is not installed: run npm ci (make test does)")
	}
	return chromium, node, root
}

// shown is what drive.mjs reports the page showed.
type shown struct {
	Console, CSP     []string
	Policy           string
	TenantView       bool
	TenantDocs       []struct{ Name, State, Text string }
	Job1States       []string
	Job1Counts       string
	Job1Progress     []float64
	Job1Outcomes     string
	ResultsFile      string
	Results          []map[string]any
	Job2Before       string
	Job2Outcomes     string
	TenantDailyTotal int64
	Jobs             []string
	OperatorView     bool
	Totals           map[string]int64
	Bars             int
	Alerts           []struct{ Name, Text string }
	Findings         []string
	DeadShown        []struct{ Name, Text string }
	DeadAfter        []string
	DeadEmptyShown   bool
}

// TestConsole_InChromium signs in to the console in headless Chromium as a
// tenant and as the operator, against the whole app (the real handler
// behind the dev host, Azurite, the simulator), and checks what a person
// sees: a job submitted in the page moves to harvested and its results
// download; a second, large job is cancelled from the page and ends
// cancelled; each tenant's spend chart adds up to what /api/v1/usage
// says; a raised alert (a batch created behind offpath's back) is in the
// alerts list and the second-door findings; a dead-lettered document is
// listed and its reprocess button puts it back on the queue path (a new
// version of its blob, no longer dead-lettered). Screenshots go to
// $CONSOLE_SCREENSHOTS, else the test's temporary directory.
func TestConsole_InChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole app and a browser")
	}
	chromium, node, root := need(t)
	speed := 600.0
	// 6 lines a simulated minute at 600 times real time: 60 lines a
	// second, so the large job (2,000 items) would run for 33 s;
	// validating, finalizing and cancelling take a tenth of a second.
	s := apptest.Start(t, apptest.Config{Sim: aoaisim.Config{Speed: &speed, Batch: aoaisim.BatchConfig{LinesPerMinute: 6}}})

	// A batch created straight against the resource: the audit raises a
	// second_door alert, which the operator must see.
	ctx := context.Background()
	direct := openai.NewClient(option.WithBaseURL(s.SimURL+"/openai/v1/"), option.WithAPIKey(aoaisim.DefaultKey), option.WithMaxRetries(0),
		option.WithHTTPClient(s.SimClient))
	var jsonl strings.Builder
	for i := range 3 {
		fmt.Fprintf(&jsonl, `{"custom_id":"side-%d","method":"POST","url":"/chat/completions","body":{"model":"gpt-4o-mini-batch","messages":[{"role":"user","content":"side project %d"}]}}`+"\n", i, i)
	}
	f, err := direct.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(jsonl.String()), "side.jsonl", "application/jsonl"),
		Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	b, err := direct.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpoint("/chat/completions"),
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	s.Fire("batch-audit")
	s.WaitAlert(audit.AlertSecondDoor, "", time.Minute)

	// A dead-lettered document, which the operator reprocesses.
	const deadName = "contoso/kb/returns.md"
	dead := s.DeadLetter(deadName, []byte("# Returns\n\nWithin 30 days."), "chat gpt-4o-mini: HTTP 500")

	shots := os.Getenv("CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	tenants := []string{"contoso", "fabrikam"}
	in, err := json.Marshal(map[string]any{
		"url": s.URL, "functionKey": apptest.FunctionKey, "tenantKey": s.Keys["contoso"], "adminKey": s.AdminKey,
		"tenants": tenants, "chromium": chromium, "shots": shots, "bigItems": 2_000, "timeoutMs": 45_000,
		"alert": audit.AlertSecondDoor, "deadDocument": deadName,
		"flags": []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
			"--disable-component-update", "--disable-sync", "--no-first-run"},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, node, filepath.Join(root, "internal", "console", "testdata", "drive.mjs"), string(in))
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var jobs []byte
		s.Do(http.MethodGet, "/api/v1/batches", "contoso", nil, &jobs)
		t.Fatalf("drive.mjs: %v\n%s\n%s\njobs now: %s", err, stderr.Bytes(), stdout.Bytes(), jobs)
	}
	var got shown
	t.Logf("drive.mjs:\n%s", stderr.Bytes())
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("drive.mjs said %q: %v", stdout.Bytes(), err)
	}
	t.Logf("screenshots in %s", shots)

	if len(got.Console) > 0 || len(got.CSP) > 0 {
		t.Errorf("the page logged errors %q and asked other origins for %q", got.Console, got.CSP)
	}
	if !strings.Contains(got.Policy, "default-src 'none'") || !strings.Contains(got.Policy, "script-src 'sha256-") || strings.Contains(got.Policy, "unsafe") {
		t.Errorf("Content-Security-Policy = %q", got.Policy)
	}
	// The tenant's view.
	if !got.TenantView || len(got.Jobs) != 2 {
		t.Fatalf("tenant view %v, jobs %v", got.TenantView, got.Jobs)
	}
	if len(got.TenantDocs) != 1 || got.TenantDocs[0].Name != deadName || got.TenantDocs[0].State != "dead_lettered" ||
		!strings.Contains(got.TenantDocs[0].Text, "HTTP 500") {
		t.Errorf("the tenant's documents show %+v, want %s dead_lettered with its reason", got.TenantDocs, deadName)
	}
	if got.Job1Counts != "3 / 3" || len(got.Job1Progress) != 2 || got.Job1Progress[0] != 3 || got.Job1Progress[1] != 3 ||
		!strings.Contains(got.Job1Outcomes, "ok 3") {
		t.Errorf("harvested job shows %q, progress %v, outcomes %q", got.Job1Counts, got.Job1Progress, got.Job1Outcomes)
	}
	var items []string
	for _, r := range got.Results {
		if r["outcome"] == "ok" {
			items = append(items, fmt.Sprint(r["item_id"]))
		}
	}
	slices.Sort(items)
	if !slices.Equal(items, []string{"item-1", "item-2", "item-3"}) || got.ResultsFile != got.Jobs[0]+"-results.jsonl" {
		t.Errorf("downloaded %s with ok items %v, want item-1..3", got.ResultsFile, items)
	}
	var job2 struct {
		State, Final string
		Outcomes     struct{ OK, Cancelled int64 }
	}
	s.Do(http.MethodGet, "/api/v1/batches/"+got.Jobs[1], "contoso", nil, &job2)
	if job2.State != "harvested" || job2.Final != "cancelled" || job2.Outcomes.Cancelled == 0 || job2.Outcomes.OK+job2.Outcomes.Cancelled != 2_000 {
		t.Errorf("the job cancelled in the page is %+v", job2)
	}
	if !strings.Contains(got.Job2Outcomes, fmt.Sprintf("cancelled %d", job2.Outcomes.Cancelled)) {
		t.Errorf("cancelled job's outcomes shown %q, API says %+v", got.Job2Outcomes, job2.Outcomes)
	}

	// The operator's view: every tenant's chart adds up to its usage.
	if !got.OperatorView || got.Bars == 0 {
		t.Fatalf("operator view %v with %d bars", got.OperatorView, got.Bars)
	}
	for _, tn := range tenants {
		var rep struct {
			Total struct {
				TotalTokens int64 `json:"total_tokens"`
			} `json:"total"`
		}
		if st := s.DoAdmin(http.MethodGet, "/api/v1/usage?tenant="+tn, nil, &rep); st != http.StatusOK {
			t.Fatalf("usage of %s: %d", tn, st)
		}
		if got.Totals[tn] != rep.Total.TotalTokens {
			t.Errorf("%s's chart totals %d tokens, /api/v1/usage says %d", tn, got.Totals[tn], rep.Total.TotalTokens)
		}
		if tn == "contoso" && (rep.Total.TotalTokens == 0 || got.TenantDailyTotal != rep.Total.TotalTokens) {
			t.Errorf("contoso spent %d tokens; its own chart shows %d", rep.Total.TotalTokens, got.TenantDailyTotal)
		}
	}
	found := false
	for _, a := range got.Alerts {
		found = found || (a.Name == audit.AlertSecondDoor && strings.Contains(a.Text, "second_door"))
	}
	if !found || !slices.Contains(got.Findings, b.ID) {
		t.Errorf("alerts shown %+v, findings %v: want the second_door alert and batch %s", got.Alerts, got.Findings, b.ID)
	}

	if len(got.DeadShown) != 1 || got.DeadShown[0].Name != deadName || !strings.Contains(got.DeadShown[0].Text, "HTTP 500") {
		t.Errorf("dead-lettered documents shown %+v, want %s with its last failure", got.DeadShown, deadName)
	}
	if len(got.DeadAfter) != 0 || !got.DeadEmptyShown {
		t.Errorf("after reprocess the list shows %v (empty note shown: %v)", got.DeadAfter, got.DeadEmptyShown)
	}
	var st struct{ State, ETag string }
	if code := s.DoAdmin(http.MethodGet, "/api/v1/admin/documents/status?name="+url.QueryEscape(deadName), nil, &st); code != http.StatusOK ||
		st.State == "dead_lettered" || st.ETag == "" || st.ETag == dead.ETag {
		t.Errorf("after the page's reprocess: %d %+v, want a new version of %s (was %s), no longer dead-lettered", code, st, deadName, dead.ETag)
	}
}
