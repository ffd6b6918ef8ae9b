package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/api"
	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/console"
	"github.com/offpath/offpath/internal/entra"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/invoke"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/entratest"
	"github.com/offpath/offpath/internal/testing/openapitest"
)

// One Azurite serves the package's tests: starting one takes seconds.
var shared azurite.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// sharedAzurite starts the shared Azurite on first use.
func sharedAzurite(t testing.TB) *azurite.Azurite {
	t.Helper()
	return shared.Get(t)
}

const (
	appContoso = "cccccccc-0000-4000-8000-000000000001"
	appAcme    = "cccccccc-0000-4000-8000-000000000002"
)

// now is the tests' clock: mid-November 2026, UTC.
var now = time.Date(2026, 11, 17, 12, 0, 0, 0, time.UTC)

// env is an API on a fresh pair of tables with two tenants, contoso and
// acme, and some usage for each.
type env struct {
	t       *testing.T
	handler http.Handler // the API behind the protocol layer, as the handler serves it
	tenants *tablestore.Tenants
	ledger  *tablestore.Ledger
	logs    *syncBuffer
	admin   string
	keys    map[string]string // tenant id → API key
	signer  *entratest.Signer
	catalog *catalog.Catalog
	authn   *auth.Authenticator
	// The operator's stores: the alert record and the audit's records on
	// Azurite, held jobs and morning reports in memory.
	alerts   *tablestore.Alerts
	findings *tablestore.Audit
	held     *heldJobs
	reports  *reports
	// docs are the document statuses; blobs and incoming the incoming
	// container (not created) that reprocess writes to.
	docs     *tablestore.Documents
	blobs    *azblob.Client
	incoming string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func newEnv(t *testing.T) *env {
	t.Helper()
	az := sharedAzurite(t)
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: az.ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	n := azurite.Suffix()
	e := &env{t: t, tenants: tablestore.NewTenants(svc, "apiten"+n), logs: &syncBuffer{}, keys: map[string]string{}}
	e.ledger = tablestore.NewLedger(svc, tablestore.LedgerOptions{Table: "apiled" + n, Now: func() time.Time { return now }})
	b, err := os.ReadFile("../../models.json")
	if err != nil {
		t.Fatal(err)
	}
	if e.catalog, err = catalog.Parse(b); err != nil {
		t.Fatal(err)
	}
	var digest string
	if e.admin, digest, err = auth.NewAdminKey(rand.Reader); err != nil {
		t.Fatal(err)
	}
	hashes, err := auth.ParseAdminKeyHashes(digest)
	if err != nil {
		t.Fatal(err)
	}
	e.signer = entratest.New(t, "k1")
	verifier, err := entra.NewVerifier(entra.Options{Issuers: []string{entratest.Issuer}, Audiences: []string{entratest.Audience},
		Keys: e.signer.Keys(), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	e.authn = auth.New(auth.Options{Credentials: e.tenants, AdminKeyHashes: hashes, Entra: verifier, Now: func() time.Time { return now }})
	e.alerts = tablestore.NewAlerts(svc, "apialr"+n, 0, func() time.Time { return now })
	e.findings = tablestore.NewAudit(svc, "apiaud"+n)
	e.held, e.reports = &heldJobs{}, &reports{days: map[string]string{}}
	e.docs = tablestore.NewDocuments(svc, "apidoc"+n, func() time.Time { return now })
	if e.blobs, err = azblob.NewClientFromConnectionString(az.ConnectionString(), nil); err != nil {
		t.Fatal(err)
	}
	e.incoming = "incoming" + n
	rules, err := claimcheck.NewRules(claimcheck.Policy{AccountURL: az.BlobURL, Container: e.incoming})
	if err != nil {
		t.Fatal(err)
	}
	enq, err := ingest.NewEnqueuer(ingest.Options{Rules: rules, Catalog: e.catalog, Tenants: e.tenants, Statuses: e.docs,
		Blobs: blobstore.NewDocuments(e.blobs, e.incoming, "ingested"+n, 0), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	srv := api.New(api.Options{
		Build: api.Build{Version: "test"}, Started: now, Auth: e.authn, Tenants: e.tenants, Usage: e.ledger,
		Catalog: e.catalog, Now: func() time.Time { return now }, Webhooks: tablestore.NewWebhooks(svc, "apihook"+n),
		Console: console.New(), Alerts: e.alerts, Findings: e.findings, Held: e.held, Reports: e.reports,
		Documents: e.docs, Reprocessor: enq,
	})
	logger := zerolog.New(e.logs).Level(zerolog.DebugLevel)
	mux := invoke.NewMux(logger, invoke.Options{Timeout: time.Minute})
	mux.Forward("/api/", srv)
	e.handler = openapitest.Handler(t, mux) // every exchange checked against the API's contract

	e.keys["contoso"] = e.create("contoso", 0, appContoso)
	e.keys["acme"] = e.create("acme", 1_000_000, appAcme)
	e.record(entry("contoso", "2026-11", ledger.Queue, "summarize", "gpt-4o-mini", "blob-1", 1000, 200))
	e.record(entry("contoso", "2026-11", ledger.Batch, "summarize", "gpt-4o-mini-batch", "job-1", 100_000, 20_000))
	e.record(entry("contoso", "2026-11", ledger.Batch, "summarize", "gpt-4o-mini-batch", "job-2", 50_000, 10_000))
	e.record(entry("acme", "2026-11", ledger.Queue, "embed", "text-embedding-3-small", "acme-secret-unit", 777_777, 0))
	return e
}

// create makes an active tenant through the store and returns its key.
func (e *env) create(id string, budget int64, apps ...string) string {
	e.t.Helper()
	tn := tenant.New(id, "Team "+id, now)
	tn.Aliases, tn.MonthlyTokenBudget, tn.AppIDs = []string{"summarize", "embed"}, budget, apps
	key, _, err := tn.RotateKey(rand.Reader, now, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.tenants.Create(context.Background(), tn); err != nil {
		e.t.Fatal(err)
	}
	return key
}

func entry(tenantID, month string, path ledger.Path, alias, deployment, unit string, prompt, completion int64) ledger.Entry {
	m, _ := ledger.ParseMonth(month)
	return ledger.Entry{Tenant: tenantID, Month: m, Path: path, Unit: unit, Alias: alias, Deployment: deployment,
		Usage: ledger.Usage{PromptTokens: prompt, CompletionTokens: completion, Requests: 1}}
}

func (e *env) record(en ledger.Entry) {
	e.t.Helper()
	if err := en.Estimate(e.catalog); err != nil {
		e.t.Fatal(err)
	}
	if err := e.ledger.Record(context.Background(), en); err != nil {
		e.t.Fatal(err)
	}
}

type response struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

// do sends a request with the credential (an API key, admin key or token;
// "" for none) and an optional body, through the protocol layer.
func (e *env) do(method, target, credential string, body any) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	r := httptest.NewRequest(method, target, rd)
	if credential != "" {
		r.Header.Set("Authorization", "Bearer "+credential)
	}
	if rd != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, r)
	res := response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(res.body, &res.json); err != nil {
			e.t.Fatalf("%s %s: body %q is not JSON: %v", method, target, res.body, err)
		}
	}
	return res
}

// expect checks a response's status and error code ("" for a success).
func (e *env) expect(res response, status int, code string) {
	e.t.Helper()
	if res.status != status {
		e.t.Fatalf("status %d, want %d; body %s", res.status, status, res.body)
	}
	if code != "" {
		if got := field(res.json, "error.code"); got != code {
			e.t.Fatalf("error.code = %v, want %q; body %s", got, code, res.body)
		}
		if msg, _ := field(res.json, "error.message").(string); msg == "" {
			e.t.Fatalf("error without a message: %s", res.body)
		}
		if len(res.json) != 1 {
			e.t.Fatalf("error body has more than the error: %s", res.body)
		}
	}
}
