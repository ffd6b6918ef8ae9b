package nightly_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/nightly"
	"github.com/offpath/offpath/internal/report"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/alerttest"
	"github.com/offpath/offpath/internal/testing/apptest"
	"github.com/offpath/offpath/internal/testing/poll"
)

var shared azurite.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	apptest.Cleanup()
	os.Exit(code)
}

// env is the nightly service over a batch service, on Azurite and an
// in-process simulator, with tables and containers of its own.
type env struct {
	t       testing.TB
	sim     *aoaisim.Server
	blobs   *azblob.Client
	store   *blobstore.Store
	tickets *container.Client
	tkName  string
	jobs    *tablestore.Jobs
	ledger  *tablestore.Ledger
	nights  *tablestore.Nights
	alerts  *alerttest.Recorder
	batch   *batch.Service
	// batchOpts made batch; simURL serves the simulator.
	batchOpts batch.Options
	simURL    string
	catalog   *catalog.Catalog
	opts      nightly.Options
	svc       *nightly.Service
	cont      batch.Containers
	reports   string
}

func newEnv(t testing.TB, linesPerMinute float64) *env {
	t.Helper()
	return newEnvOn(t, shared.Get(t).ConnectionString(), linesPerMinute)
}

// newEnvOn is newEnv on the Azurite of the connection string conn.
func newEnvOn(t testing.TB, conn string, linesPerMinute float64) *env {
	t.Helper()
	speed := 600.0
	sim, err := aoaisim.New(aoaisim.Config{Speed: &speed, Batch: aoaisim.BatchConfig{LinesPerMinute: linesPerMinute},
		Deployments: []aoaisim.Deployment{{Name: "gpt-4o-mini-batch", Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeGlobalBatch},
			{Name: "gpt-4o-mini", Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeStandard}}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = sim.Close() })
	azure, err := azopenai.NewBatchClient(azopenai.BatchConfig{Endpoint: ts.URL, APIKey: aoaisim.DefaultKey, AllowLoopbackHTTP: true,
		MaxRetryWait: time.Second, MaxAttempts: 2}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	tables, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: conn})
	if err != nil {
		t.Fatal(err)
	}
	bc, err := azblob.NewClientFromConnectionString(conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := azurite.Suffix()
	e := &env{t: t, sim: sim, blobs: bc, store: blobstore.New(bc, blobstore.Options{}), alerts: &alerttest.Recorder{},
		jobs:    tablestore.NewJobs(tables, "njobs"+n, nil),
		ledger:  tablestore.NewLedger(tables, tablestore.LedgerOptions{Table: "nled" + n}),
		nights:  tablestore.NewNights(tables, "nnights"+n),
		cont:    batch.Containers{Inputs: "in" + n, Results: "res" + n, Uploads: "up" + n},
		reports: "rep" + n,
	}
	e.tkName = "tk" + n
	e.tickets = bc.ServiceClient().NewContainerClient(e.tkName)
	if _, err := e.tickets.Create(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../models.json")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	tenants := tablestore.NewTenants(tables, "nten"+n)
	sup := tenant.New("support", "Support", time.Now())
	sup.Aliases = []string{"summarize"}
	if err := tenants.Create(context.Background(), sup); err != nil {
		t.Fatal(err)
	}
	e.simURL, e.catalog = ts.URL, cat
	e.batchOpts = batch.Options{Jobs: e.jobs, Blobs: e.store, Azure: azure, Ledger: e.ledger, Budgets: ledger.NewBudgets(e.ledger),
		Catalog: cat, Alerts: e.alerts, Containers: e.cont, PollInterval: time.Nanosecond, LeaseTTL: 3 * time.Second,
		BackoffBase: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond}
	e.batch, err = batch.New(e.batchOpts)
	if err != nil {
		t.Fatal(err)
	}
	renderer, err := report.New(report.Options{TicketURL: "https://support.example.com/tickets/{id}"})
	if err != nil {
		t.Fatal(err)
	}
	e.opts = nightly.Options{Tickets: blobstore.NewContainer(e.tickets), Batches: e.batch, Tenants: tenants, Nights: e.nights,
		Summaries: tablestore.NewSummaries(tables, "nsum"+n), Blobs: blobstore.New(bc, blobstore.Options{BlockSize: nightly.BlockSize}), Ledger: e.ledger, Alerts: e.alerts,
		Renderer: renderer, Uploads: e.cont.Uploads, Reports: e.reports}
	e.svc = e.service()
	return e
}

// service returns a new nightly Service on the same stores: another process.
func (e *env) service() *nightly.Service {
	e.t.Helper()
	s, err := nightly.New(e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) ctx() context.Context {
	logger := zerolog.New(zerolog.NewTestWriter(e.t)).Level(zerolog.WarnLevel)
	ctx, cancel := context.WithTimeout(logger.WithContext(context.Background()), 2*time.Minute)
	e.t.Cleanup(cancel)
	return ctx
}

// put writes a blob into the tickets container.
func (e *env) put(name, body string) {
	e.t.Helper()
	if _, err := e.blobs.UploadBuffer(context.Background(), e.tkName, name, []byte(body), nil); err != nil {
		e.t.Fatalf("put %s: %v", name, err)
	}
}

// ticketLines returns n JSONL tickets with ids prefix-0..n-1.
func ticketLines(prefix string, n int, body func(i int) string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":"%s-%d","subject":"Subject %d","customer":"cust-%d","body":%q,"created_at":"2026-03-14T09:30:00Z","priority":"high"}`+"\n",
			prefix, i, i, i%5, body(i))
	}
	return b.String()
}

// harvest polls the batch service until the job is harvested.
func (e *env) harvest(id string) batch.Job {
	e.t.Helper()
	ctx := e.ctx()
	var j batch.Job
	if !poll.Within(90*time.Second, func() bool {
		if _, err := e.batch.Poll(ctx); err != nil {
			e.t.Fatalf("Poll: %v", err)
		}
		var err error
		if j, err = e.batch.Get(ctx, "support", id); err != nil {
			e.t.Fatal(err)
		}
		return j.State == batch.Harvested
	}) {
		e.t.Fatalf("job %s not harvested: %s %+v", id, j.State, j.Parts)
	}
	return j
}

// read returns a blob of a container.
func (e *env) read(containerName, name string) string {
	e.t.Helper()
	r, _, err := e.store.Open(context.Background(), containerName, name)
	if err != nil {
		e.t.Fatalf("open %s/%s: %v", containerName, name, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

var day = time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
