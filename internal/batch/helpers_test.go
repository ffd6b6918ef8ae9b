package batch_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/alerttest"
	"github.com/offpath/offpath/internal/testing/apptest"
	"github.com/offpath/offpath/internal/testing/memstore"
	"github.com/offpath/offpath/internal/testing/poll"
)

// One Azurite serves the package's tests; they keep apart by table and
// container names.
var shared azurite.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	apptest.Cleanup()
	os.Exit(code)
}

func sharedAzurite(tb testing.TB) *azurite.Azurite { return shared.Get(tb) }

const batchDep = "gpt-4o-mini-batch"

// ledgerStore is what the tests use of a ledger: tablestore's on Azurite,
// or memstore's.
type ledgerStore interface {
	batch.Ledger
	ledger.Totaler
	Month(ctx context.Context, tenantID string, m ledger.Month) ([]ledger.Entry, error)
}

// countingLedger counts Record calls per unit, and can fail after writing.
type countingLedger struct {
	ledgerStore
	mu      sync.Mutex
	records map[string]int
	// failAfterWrite makes the next n Records write and then report an
	// error, as if the process died right after the write.
	failAfterWrite atomic.Int32
}

func (l *countingLedger) Record(ctx context.Context, e ledger.Entry) error {
	if err := l.ledgerStore.Record(ctx, e); err != nil {
		return err
	}
	l.mu.Lock()
	l.records[e.Unit]++
	l.mu.Unlock()
	if l.failAfterWrite.Add(-1) >= 0 {
		return errors.New("crash after the ledger write")
	}
	return nil
}

// env is a batch service on Azurite and an in-process simulator.
type env struct {
	t       testing.TB
	sim     *aoaisim.Server
	simURL  string
	azure   *azopenai.BatchClient
	jobs    batch.JobStore
	ledger  *countingLedger
	blobs   *blobstore.Store
	cont    batch.Containers
	catalog *catalog.Catalog
	alerts  *alerttest.Recorder
	opts    batch.Options
	svc     *batch.Service
	tenants map[string]tenant.Tenant
	// storage counts the requests sent to Azurite.
	storage *atomic.Int64
	// tables and suffix make more tables next to the env's (the audit's).
	tables *aztables.ServiceClient
	suffix string
}

type envConfig struct {
	sim aoaisim.Config
	// listPage is the batch client's list page size (0: Azure's largest).
	listPage int
	// models replaces the shipped models.json.
	models string
	tweak  func(o *batch.Options)
	budget int64
	// memTables keeps the jobs and the ledger in memory (package
	// memstore, held to tablestore's behaviour by its contract suite)
	// instead of on Azurite: for a test of thousands of jobs whose subject
	// is not storage. Blobs stay on Azurite.
	memTables bool
	// blockSize is the blob store's block size (0: batch.BlockSize, what
	// the handler uses). Each upload buffers whole blocks, which the race
	// detector tracks byte by byte: a test that writes thousands of
	// blobs of a few KB takes a smaller one.
	blockSize int64
}

func simConfig(speed float64, deps ...aoaisim.Deployment) aoaisim.Config {
	if len(deps) == 0 {
		deps = []aoaisim.Deployment{{Name: batchDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeGlobalBatch}}
	}
	return aoaisim.Config{Deployments: deps, Speed: &speed}
}

func newEnv(t testing.TB, cfg envConfig) *env {
	t.Helper()
	az := sharedAzurite(t)
	sim, err := aoaisim.New(cfg.sim, zerolog.Nop())
	if err != nil {
		t.Fatalf("aoaisim.New: %v", err)
	}
	ts := httptest.NewServer(sim)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = sim.Close() })
	client, err := azopenai.NewBatchClient(azopenai.BatchConfig{Endpoint: ts.URL, APIKey: aoaisim.DefaultKey, AllowLoopbackHTTP: true,
		MaxRetryWait: time.Second, MaxAttempts: 2, ListPageSize: cfg.listPage}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	storage := new(atomic.Int64)
	counted := azcore.ClientOptions{PerRetryPolicies: []policy.Policy{countRequests{storage}}}
	svc, err := aztables.NewServiceClientFromConnectionString(az.ConnectionString(), &aztables.ClientOptions{ClientOptions: counted})
	if err != nil {
		t.Fatal(err)
	}
	bc, err := azblob.NewClientFromConnectionString(az.ConnectionString(), &azblob.ClientOptions{ClientOptions: counted})
	if err != nil {
		t.Fatal(err)
	}
	n := azurite.Suffix()
	e := &env{t: t, sim: sim, simURL: ts.URL, azure: client, alerts: &alerttest.Recorder{}, tenants: map[string]tenant.Tenant{},
		tables: svc, suffix: n, storage: storage,
		jobs:   tablestore.NewJobs(svc, "bjobs"+n, nil),
		ledger: &countingLedger{ledgerStore: tablestore.NewLedger(svc, tablestore.LedgerOptions{Table: "bled" + n}), records: map[string]int{}},
		blobs:  blobstore.New(bc, blobstore.Options{BlockSize: cmp.Or(cfg.blockSize, batch.BlockSize)}),
		cont:   batch.Containers{Inputs: "in" + n, Results: "res" + n, Uploads: "up" + n},
	}
	if cfg.memTables {
		e.jobs, e.ledger.ledgerStore = memstore.NewJobs(nil), memstore.NewLedger(nil)
	}
	b, err := os.ReadFile("../../models.json")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.models != "" {
		b = []byte(cfg.models)
	}
	if e.catalog, err = catalog.Parse(b); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"contoso", "fabrikam"} {
		tn := tenant.New(id, id, time.Now())
		tn.Aliases, tn.MonthlyTokenBudget = []string{"summarize", "embed"}, cfg.budget
		e.tenants[id] = tn
	}
	e.opts = batch.Options{
		Jobs: e.jobs, Blobs: e.blobs, Azure: client, Ledger: e.ledger, Budgets: ledger.NewBudgets(e.ledger.ledgerStore),
		Catalog: e.catalog, Alerts: e.alerts, Containers: e.cont,
		PollInterval: time.Nanosecond, LeaseTTL: 3 * time.Second, BackoffBase: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
	}
	if cfg.tweak != nil {
		cfg.tweak(&e.opts)
	}
	e.svc = e.service()
	return e
}

// countRequests is an azcore policy that counts each request sent.
type countRequests struct{ n *atomic.Int64 }

func (c countRequests) Do(req *policy.Request) (*http.Response, error) {
	c.n.Add(1)
	return req.Next()
}

// requests is how many requests the env's clients sent so far to Azurite
// and to its simulator.
func (e *env) requests() int64 {
	n := e.storage.Load()
	for _, v := range e.sim.Stats().Routes {
		n += v
	}
	return n
}

// service returns a new Service on the same stores: a fresh process.
func (e *env) service() *batch.Service {
	e.t.Helper()
	s, err := batch.New(e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) ctx() context.Context { return e.ctxFor(2 * time.Minute) }

// ctxFor is a context with the test's logger that ends after d.
func (e *env) ctxFor(d time.Duration) context.Context {
	logger := zerolog.New(zerolog.NewTestWriter(e.t)).Level(zerolog.WarnLevel)
	ctx, cancel := context.WithTimeout(logger.WithContext(context.Background()), d)
	e.t.Cleanup(cancel)
	return ctx
}

// submit submits n items for the tenant.
func (e *env) submit(tenantID string, items []batch.Item, mod ...func(r *batch.Request)) batch.Job {
	e.t.Helper()
	r := batch.Request{Alias: "summarize", SystemPrompt: "Summarise the ticket.", MaxTokens: 32, Items: items}
	for _, m := range mod {
		m(&r)
	}
	j, _, err := e.svc.Submit(e.ctx(), e.tenants[tenantID], r)
	if err != nil {
		e.t.Fatalf("Submit: %v", err)
	}
	return j
}

func items(n int, prefix string) []batch.Item {
	out := make([]batch.Item, n)
	for i := range out {
		out[i] = batch.Item{ID: fmt.Sprintf("%s-%03d", prefix, i), Prompt: fmt.Sprintf("Ticket %d: the printer on floor %d is on fire again.", i, i%7)}
	}
	return out
}

// pollUntil runs poll ticks until every job satisfies cond.
func (e *env) pollUntil(timeout time.Duration, cond func(j batch.Job) bool, ids ...string) map[string]batch.Job {
	e.t.Helper()
	ctx := e.ctx()
	var got map[string]batch.Job
	if !poll.Within(timeout, func() bool {
		if _, err := e.svc.Poll(ctx); err != nil {
			e.t.Fatalf("Poll: %v", err)
		}
		got = map[string]batch.Job{}
		all := true
		for _, id := range ids {
			j := e.get(id)
			got[id] = j
			all = all && cond(j)
		}
		return all
	}) {
		for id, j := range got {
			e.t.Logf("job %s: state %s parts %+v", id, j.State, j.Parts)
		}
		e.t.Fatalf("jobs not there after %v", timeout)
	}
	return got
}

func harvested(j batch.Job) bool { return j.State == batch.Harvested }

// get reads a job whatever its tenant.
func (e *env) get(id string) batch.Job {
	e.t.Helper()
	for tn := range e.tenants {
		j, err := e.jobs.Get(context.Background(), tn, id)
		if err == nil {
			return j
		}
		if !errors.Is(err, batch.ErrNotFound) {
			e.t.Fatal(err)
		}
	}
	e.t.Fatalf("no job %s", id)
	return batch.Job{}
}

// results reads a job's results file.
func (e *env) results(j batch.Job) []batch.ResultLine {
	e.t.Helper()
	r, _, _, err := e.svc.Results(context.Background(), j.Tenant, j.ID)
	if err != nil {
		e.t.Fatalf("Results: %v", err)
	}
	defer r.Close()
	var out []batch.ResultLine
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l batch.ResultLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			e.t.Fatalf("result line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// check verifies what every harvested job must satisfy: conservation, one
// result per item, usage in the ledger equal to the sum of the results'
// usage, and counts equal to the outcomes in the results.
func (e *env) check(j batch.Job, want map[batch.Outcome]int) []batch.ResultLine {
	e.t.Helper()
	if j.State != batch.Harvested {
		e.t.Fatalf("job %s is %s, want harvested", j.ID, j.State)
	}
	c := j.Counts()
	if c.Total() != int64(j.Items) {
		e.t.Errorf("conservation: %d items, counts %+v sum to %d", j.Items, c, c.Total())
	}
	res := e.results(j)
	if len(res) != j.Items {
		e.t.Errorf("%d result lines, want %d", len(res), j.Items)
	}
	ids := map[string]bool{}
	got := map[batch.Outcome]int{}
	var prompt, completion int64
	for _, l := range res {
		if ids[l.ItemID] {
			e.t.Errorf("item %q has two results", l.ItemID)
		}
		ids[l.ItemID] = true
		got[l.Outcome]++
		if l.Usage != nil {
			prompt += l.Usage.PromptTokens
			completion += l.Usage.CompletionTokens
		}
	}
	wantCounts := batch.Counts{OK: int64(got[batch.OK]), Refused: int64(got[batch.Refused]), Failed: int64(got[batch.FailedOutcome]),
		Expired: int64(got[batch.ExpiredOutcome]), Cancelled: int64(got[batch.CancelledOutcome])}
	if c != wantCounts {
		e.t.Errorf("job counts %+v, results say %+v", c, wantCounts)
	}
	for o, n := range want {
		if n >= 0 && got[o] != n {
			e.t.Errorf("%d results %s, want %d (all: %v)", got[o], o, n, got)
		}
		if n < 0 && got[o] == 0 {
			e.t.Errorf("no results %s, want some (all: %v)", o, got)
		}
	}
	u := j.Usage()
	if u.PromptTokens != prompt || u.CompletionTokens != completion {
		e.t.Errorf("job usage %d/%d, results %d/%d", u.PromptTokens, u.CompletionTokens, prompt, completion)
	}
	tot, err := e.ledger.Totals(context.Background(), j.Tenant, j.Month())
	if err != nil {
		e.t.Fatal(err)
	}
	_ = tot
	entries, err := e.ledger.Month(context.Background(), j.Tenant, j.Month())
	if err != nil {
		e.t.Fatal(err)
	}
	var lp, lc int64
	for _, en := range entries {
		if strings.HasPrefix(en.Unit, "batch:"+j.ID+"/") {
			lp += en.PromptTokens
			lc += en.CompletionTokens
			if en.Alias != j.Alias || en.Path != ledger.Batch || en.Deployment != batchDep {
				e.t.Errorf("ledger entry %+v: wrong alias, path or deployment", en)
			}
		}
	}
	if lp != prompt || lc != completion {
		e.t.Errorf("ledger has %d/%d tokens for job %s, results %d/%d", lp, lc, j.ID, prompt, completion)
	}
	return res
}

// azureLeft counts the simulator's files still there.
func (e *env) azureFiles() int { return len(e.sim.State().Files) }
