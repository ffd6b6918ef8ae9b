package batch_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/aoaisim"
	"github.com/offpath/offpath/internal/azurite"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/devhost"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/sbemu"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
)

// The real handler, built once for the end-to-end tests.
var handlerBin struct {
	once sync.Once
	path string
	err  error
	dir  string
}

func builtHandler(t *testing.T) string {
	t.Helper()
	handlerBin.once.Do(func() {
		if handlerBin.dir, handlerBin.err = os.MkdirTemp("", "batch-e2e-handler-"); handlerBin.err != nil {
			return
		}
		handlerBin.path = filepath.Join(handlerBin.dir, "handler")
		cmd := exec.Command("go", "build", "-o", handlerBin.path, "github.com/offpath/offpath/handler")
		cmd.Stderr = os.Stderr
		handlerBin.err = cmd.Run()
	})
	if handlerBin.err != nil {
		t.Fatalf("build handler: %v", handlerBin.err)
	}
	return handlerBin.path
}

// stack is the whole app behind a dev host: its own Azurite (the handler
// uses the default table and container names), the simulator, the handler.
type stack struct {
	t       *testing.T
	url     string
	appDir  string
	sim     *aoaisim.Server
	keys    map[string]string
	jobs    *tablestore.Jobs
	led     *tablestore.Ledger
	handler string
}

func newStack(t *testing.T, sim aoaisim.Config, settings map[string]string) *stack {
	t.Helper()
	bin := builtHandler(t)
	az := azurite.Start(t)
	s, err := aoaisim.New(sim, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	simURL, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	dir := t.TempDir()
	st := &stack{t: t, appDir: dir, sim: s, keys: map[string]string{}, handler: filepath.Join(dir, "handler")}
	write := func(rel, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"host.json", "models.json", "functions/api/function.json", "functions/batch-poll/function.json"} {
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		write(strings.TrimPrefix(f, "functions/"), string(b))
	}
	if err := os.Link(bin, st.handler); err != nil {
		t.Fatal(err)
	}
	values := map[string]string{"FUNCTIONS_WORKER_RUNTIME": "custom", "AzureWebJobsStorage": az.ConnectionString(),
		"OFFPATH_AOAI_ENDPOINT": simURL, "OFFPATH_AOAI_API_KEY": aoaisim.DefaultKey, "OFFPATH_LOG_LEVEL": "warn",
		"OFFPATH_BATCH_POLL_SCHEDULE": "*/1 * * * * *", "OFFPATH_BATCH_POLL_INTERVAL": "50ms", "OFFPATH_BATCH_BACKOFF_BASE": "500ms",
		"DEVHOST_FUNCTION_KEY": "fkey", "DEVHOST_MASTER_KEY": "mkey"}
	for k, v := range settings {
		values[k] = v
	}
	ls, _ := json.Marshal(map[string]any{"IsEncrypted": false, "Values": values})
	write("local.settings.json", string(ls))

	tables, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: az.ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	tenants := tablestore.NewTenants(tables, "")
	for _, id := range []string{"contoso", "fabrikam"} {
		tn := tenant.New(id, id, time.Now())
		tn.Aliases = []string{"summarize"}
		key, _, err := tn.RotateKey(rand.Reader, time.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := tenants.Create(context.Background(), tn); err != nil {
			t.Fatal(err)
		}
		st.keys[id] = key
	}
	st.jobs = tablestore.NewJobs(tables, "", nil)
	st.led = tablestore.NewLedger(tables, tablestore.LedgerOptions{})

	app, err := devhost.LoadApp(dir, func(string) string { return "" })
	if err != nil {
		t.Fatalf("LoadApp: %v", err)
	}
	blobs, err := azblob.NewClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	queues, err := azqueue.NewServiceClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	broker, err := sbemu.New(queues, blobs, sbemu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := devhost.New(devhost.Options{App: app, Blobs: blobs, Queues: queues, Broker: broker, HTTPAddr: "127.0.0.1:0",
		HandlerOutput: zerolog.NewTestWriter(t)}, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			t.Error("dev host did not stop")
		}
	})
	st.url = h.URL()
	return st
}

// do calls the API through the dev host as a tenant.
func (s *stack) do(method, path, tenantID string, body any, out any) int {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequest(method, s.url+path, rd)
		req.Header.Set("x-functions-key", "fkey")
		req.Header.Set("Authorization", "Bearer "+s.keys[tenantID])
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			if time.Now().After(deadline) {
				s.t.Fatalf("%s %s: %v", method, path, err)
			}
			time.Sleep(100 * time.Millisecond) // the handler is starting
			continue
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode >= 500 && time.Now().Before(deadline) && body == nil { // the handler is restarting
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if out != nil {
			if p, ok := out.(*[]byte); ok {
				*p = b
			} else if err := json.Unmarshal(b, out); err != nil {
				s.t.Fatalf("%s %s: %d %s: %v", method, path, res.StatusCode, b, err)
			}
		}
		return res.StatusCode
	}
}

type jobJSON struct {
	ID       string           `json:"id"`
	State    batch.State      `json:"state"`
	Final    batch.State      `json:"final"`
	Items    int              `json:"items"`
	Outcomes batch.Counts     `json:"outcomes"`
	Usage    ledger.UsageView `json:"usage"`
	Parts    []struct {
		HeldReason string `json:"held_reason"`
	} `json:"parts"`
}

func e2eBody(prefix string, n int) map[string]any {
	var items []map[string]any
	for i := range n {
		items = append(items, map[string]any{"id": fmt.Sprintf("%s-%d", prefix, i), "prompt": fmt.Sprintf("Ticket %d from %s: the VPN drops every hour.", i, prefix)})
	}
	return map[string]any{"alias": "summarize", "system_prompt": "Summarise.", "max_tokens": 24, "items": items}
}

// TestEndToEnd_TwoTenantsThroughTheDevHost runs the whole life cycle
// through the dev host and the real handler, for two tenants at once: the
// deployment's quota takes one job at a time, so one waits in held; the
// batch-poll timer fires every second; both jobs end harvested, their
// results are read through the API and their usage is in the ledger.
func TestEndToEnd_TwoTenantsThroughTheDevHost(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	// Slow enough (about 3 s a job) that the second job is submitted while
	// the first runs, whenever the timer fires.
	sim := simConfig(60, aoaisim.Deployment{Name: batchDep, Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch,
		EnqueuedTokenQuota: 3000, QuotaBehaviour: aoaisim.QuotaFailFast})
	s := newStack(t, sim, nil)
	ids := map[string]string{}
	for _, tn := range []string{"contoso", "fabrikam"} {
		var j jobJSON
		if st := s.do(http.MethodPost, "/api/v1/batches", tn, e2eBody(tn, 30), &j); st != http.StatusAccepted {
			t.Fatalf("%s submit: %d", tn, st)
		}
		ids[tn] = j.ID
	}
	seen := map[batch.State]bool{}
	deadline := time.Now().Add(120 * time.Second)
	for {
		done := 0
		for tn, id := range ids {
			var j jobJSON
			s.do(http.MethodGet, "/api/v1/batches/"+id, tn, nil, &j)
			seen[j.State] = true
			if j.State == batch.Harvested {
				done++
			}
		}
		if done == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not harvested after 120 s; states seen %v", seen)
		}
		time.Sleep(30 * time.Millisecond)
	}
	held := 0
	for tn, id := range ids {
		j, err := s.jobs.Get(context.Background(), tn, id)
		if err != nil {
			t.Fatal(err)
		}
		if !j.Parts[0].HeldSince.IsZero() {
			held++
		}
	}
	if held != 1 || !seen[batch.Submitted] {
		t.Errorf("%d jobs were held (states seen by the client: %v), want one held while the other ran", held, seen)
	}
	for tn, id := range ids {
		var j jobJSON
		s.do(http.MethodGet, "/api/v1/batches/"+id, tn, nil, &j)
		if j.Final != batch.Completed || j.Outcomes.OK != 30 || j.Outcomes.Total() != int64(j.Items) {
			t.Errorf("%s job: %+v", tn, j)
		}
		var raw []byte
		if st := s.do(http.MethodGet, "/api/v1/batches/"+id+"/results", tn, nil, &raw); st != 200 {
			t.Fatalf("%s results: %d", tn, st)
		}
		var prompt, completion int64
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		for _, l := range lines {
			var r batch.ResultLine
			if err := json.Unmarshal([]byte(l), &r); err != nil || r.Outcome != batch.OK || !strings.HasPrefix(r.ItemID, tn+"-") {
				t.Errorf("%s result %s: %v", tn, l, err)
				continue
			}
			prompt += r.Usage.PromptTokens
			completion += r.Usage.CompletionTokens
		}
		if len(lines) != 30 || j.Usage.PromptTokens != prompt || j.Usage.CompletionTokens != completion {
			t.Errorf("%s: %d results with %d/%d tokens; job says %d/%d", tn, len(lines), prompt, completion, j.Usage.PromptTokens, j.Usage.CompletionTokens)
		}
		var usage ledger.ReportView
		s.do(http.MethodGet, "/api/v1/usage", tn, nil, &usage)
		if usage.Total.PromptTokens != prompt || usage.Total.CompletionTokens != completion || len(usage.Lines) != 1 || usage.Lines[0].Path != ledger.Batch {
			t.Errorf("%s usage %+v, want exactly the job's %d/%d on the batch path", tn, usage, prompt, completion)
		}
		// Another tenant's job is a 404.
		other := map[string]string{"contoso": "fabrikam", "fabrikam": "contoso"}[tn]
		if st := s.do(http.MethodGet, "/api/v1/batches/"+id, other, nil, nil); st != http.StatusNotFound {
			t.Errorf("%s reading %s's job: %d, want 404", other, tn, st)
		}
	}
}

// TestEndToEnd_KillMidHarvest kills the handler process while it harvests
// a large job, after the copy of Azure's output is recorded and before the
// job is marked harvested; the dev host restarts the handler, the next poll (once the dead
// poller's lease has run out) finishes the job, and the usage is counted
// once.
func TestEndToEnd_KillMidHarvest(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	s := newStack(t, simConfig(20000), map[string]string{"OFFPATH_BATCH_LEASE_TTL": "2s"})
	var j jobJSON
	if st := s.do(http.MethodPost, "/api/v1/batches", "contoso", e2eBody("big", 12000), &j); st != http.StatusAccepted {
		t.Fatalf("submit: %d", st)
	}
	killed, copied := false, false
	deadline := time.Now().Add(120 * time.Second)
	for !killed {
		stored, err := s.jobs.Get(context.Background(), "contoso", j.ID)
		if err != nil {
			t.Fatal(err)
		}
		p := stored.Parts[0]
		if p.Status == batch.PartHarvested {
			t.Fatal("the harvest finished before the test could kill it")
		}
		if p.Status == batch.PartDone && p.Copied && stored.Lease.Owner != "" {
			copied = p.Copied
			if err := s.killHandler(); err != nil {
				t.Fatal(err)
			}
			killed = true
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job never reached its harvest: %s", stored.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("killed the handler mid-harvest (copy recorded: %v)", copied)
	for {
		s.do(http.MethodGet, "/api/v1/batches/"+j.ID, "contoso", nil, &j)
		if j.State == batch.Harvested {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not harvested after the restart: %s", j.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if j.Outcomes.OK != 12000 {
		t.Errorf("outcomes %+v, want 12000 ok", j.Outcomes)
	}
	entries, err := s.led.Month(context.Background(), "contoso", ledger.MonthOf(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].PromptTokens != j.Usage.PromptTokens || entries[0].CompletionTokens != j.Usage.CompletionTokens {
		t.Errorf("ledger %+v, want one row with the job's %d/%d tokens", entries, j.Usage.PromptTokens, j.Usage.CompletionTokens)
	}
}

// killHandler SIGKILLs the handler process started from this stack's app
// folder.
func (s *stack) killHandler() error {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", p.Name(), "exe"))
		if err != nil || exe != s.handler {
			continue
		}
		return syscall.Kill(pid, syscall.SIGKILL)
	}
	return fmt.Errorf("no process runs %s", s.handler)
}
