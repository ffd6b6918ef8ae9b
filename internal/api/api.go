// Package api is offpath's REST API, served by the `api` HTTP function in
// forwarding mode: the Functions host hands the original request to the
// handler (path prefix /api included), so the API is an ordinary
// http.Handler with Go's routing, tested without any host in between.
//
// Every endpoint but health, version and the OpenAPI document needs a credential (package auth).
// A tenant sees only itself: its usage, never another's, whatever it puts in
// the query. The admin credential manages tenants and reads any tenant's
// usage. Errors have one shape, {"error":{"code","message"}}, and input is
// checked at the edge: bodies are limited (413), unknown JSON fields and
// query parameters refused (400), query strings bounded (414), and tenant
// ids validated before they come near a storage key.
package api

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tenant"
)

// Build describes the running binary, for /api/v1/version.
type Build struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Go      string `json:"go"`
}

// Limits on what a request may carry.
const (
	DefaultMaxBody  = 1 << 20
	DefaultMaxQuery = 2048
)

// Authenticator says who is calling (package auth's Authenticator).
type Authenticator interface {
	Authenticate(ctx context.Context, r *http.Request) (auth.Principal, error)
	// Forget drops cached credentials after a change made here.
	Forget()
}

// Tenants stores tenants (package tablestore's Tenants).
type Tenants interface {
	Create(ctx context.Context, t tenant.Tenant) error
	Get(ctx context.Context, id string) (tenant.Tenant, error)
	List(ctx context.Context) ([]tenant.Tenant, error)
	Update(ctx context.Context, id string, change func(*tenant.Tenant) error) (tenant.Tenant, error)
}

// Usage reads the ledger's month reports (package tablestore's Ledger,
// from the rollups kept with the rows).
type Usage interface {
	Report(ctx context.Context, tenantID string, m ledger.Month) (ledger.Report, error)
	// Rollups are the month's sums per UTC day and line.
	Rollups(ctx context.Context, tenantID string, m ledger.Month) ([]ledger.Rollup, error)
}

// Options are the API's dependencies. Health and version need none of them;
// the other endpoints answer 503 while theirs are missing.
type Options struct {
	Build   Build
	Started time.Time
	Auth    Authenticator
	Tenants Tenants
	Usage   Usage
	// Catalog lists the aliases a tenant may be given.
	Catalog *catalog.Catalog
	// Now is the clock (default time.Now): the default month is now's, UTC.
	Now func() time.Time
	// Rand makes API keys (default crypto/rand).
	Rand io.Reader
	// MaxBody bounds request bodies (default DefaultMaxBody): larger is 413.
	MaxBody int64
	// MaxQuery bounds the raw query string (default DefaultMaxQuery): 414.
	MaxQuery int
	// Batches runs batch jobs; the batch endpoints answer 503 without it.
	Batches Batches
	// MaxBatchBody bounds a batch submission (default DefaultMaxBatchBody).
	MaxBatchBody int64
	// Webhooks keeps tenants' webhooks; their endpoints answer 503
	// without it.
	Webhooks Webhooks
	// Console serves the console page under /api/v1/console/ (package
	// console); 404 without it.
	Console http.Handler
	// The operator's views (admin credential): the record of raised
	// alerts, the jobs held for admission, the second-door audit's
	// findings and the morning reports. Each answers 503 without its store.
	Alerts   AlertRecord
	Held     HeldJobs
	Findings Findings
	Reports  Reports
	// Documents reads document statuses, Reprocessor reprocesses
	// dead-lettered documents; their endpoints answer 503 without them.
	Documents   Documents
	Reprocessor Reprocessor
}

// Batches runs tenants' batch jobs (package batch's Service).
type Batches interface {
	Submit(ctx context.Context, t tenant.Tenant, r batch.Request) (batch.Job, bool, error)
	Get(ctx context.Context, tenantID, id string) (batch.Job, error)
	List(ctx context.Context, tenantID string, state batch.State, cursor string, limit int) ([]batch.Job, string, error)
	Results(ctx context.Context, tenantID, id string) (io.ReadCloser, batch.Job, bool, error)
	Cancel(ctx context.Context, tenantID, id string) (batch.Job, error)
}

// Server is the REST API.
type Server struct {
	o   Options
	mux *http.ServeMux
	// doc is the OpenAPI document, converted on its first request: the
	// conversion takes milliseconds, which a cold start need not pay.
	doc func() openAPIDoc
}

// New returns the API.
func New(o Options) *Server {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.MaxQuery <= 0 {
		o.MaxQuery = DefaultMaxQuery
	}
	if o.MaxBatchBody <= 0 {
		o.MaxBatchBody = DefaultMaxBatchBody
	}
	s := &Server{o: o, mux: http.NewServeMux(), doc: sync.OnceValue(newOpenAPIDoc)}
	s.routes()
	return s
}

// routes lists every endpoint. Patterns carry no method: methods() answers
// 405 in the API's error shape, where a catch-all would turn ServeMux's own
// 405s into 404s.
func (s *Server) routes() {
	s.mux.HandleFunc("/api/v1/health", methods{http.MethodGet: s.health}.serve)
	s.mux.HandleFunc("/api/v1/version", methods{http.MethodGet: s.version}.serve)
	s.mux.HandleFunc("/api/v1/openapi.json", methods{http.MethodGet: s.openAPI}.serve)
	s.mux.HandleFunc("/api/v1/usage", methods{http.MethodGet: s.authed(s.usageJSON)}.serve)
	s.mux.HandleFunc("/api/v1/usage/export", methods{http.MethodGet: s.authed(s.usageCSV)}.serve)
	s.mux.HandleFunc("/api/v1/tenants", methods{
		http.MethodGet:  s.admin(s.listTenants),
		http.MethodPost: s.admin(s.createTenant),
	}.serve)
	s.mux.HandleFunc("/api/v1/tenants/{id}", methods{
		http.MethodGet:   s.admin(s.getTenant),
		http.MethodPatch: s.admin(s.patchTenant),
	}.serve)
	s.mux.HandleFunc("/api/v1/tenants/{id}/keys", methods{http.MethodPost: s.admin(s.rotateKey)}.serve)
	s.mux.HandleFunc("/api/v1/tenants/{id}/keys/{key}", methods{http.MethodDelete: s.admin(s.revokeKey)}.serve)
	s.mux.HandleFunc("/api/v1/tenants/{id}/webhook", methods{
		http.MethodGet:    s.webhooks(s.getWebhook),
		http.MethodPut:    s.webhooks(s.putWebhook),
		http.MethodDelete: s.webhooks(s.deleteWebhook),
	}.serve)
	s.mux.HandleFunc("/api/v1/tenants/{id}/webhook/events", methods{http.MethodGet: s.webhooks(s.webhookEvents)}.serve)
	s.mux.HandleFunc("/api/v1/batches", methods{
		http.MethodGet:  s.tenantOnly(s.listBatches),
		http.MethodPost: s.tenantOnly(s.submitBatch),
	}.serve)
	s.mux.HandleFunc("/api/v1/batches/{id}", methods{http.MethodGet: s.tenantOnly(s.getBatch)}.serve)
	s.mux.HandleFunc("/api/v1/batches/{id}/results", methods{http.MethodGet: s.tenantOnly(s.batchResults)}.serve)
	s.mux.HandleFunc("/api/v1/batches/{id}/cancel", methods{http.MethodPost: s.tenantOnly(s.cancelBatch)}.serve)
	s.mux.HandleFunc("/api/v1/whoami", methods{http.MethodGet: s.authed(s.whoami)}.serve)
	s.mux.HandleFunc("/api/v1/usage/daily", methods{http.MethodGet: s.authed(s.usageDaily)}.serve)
	s.mux.HandleFunc("/api/v1/alerts", methods{http.MethodGet: s.admin(s.alerts)}.serve)
	s.mux.HandleFunc("/api/v1/held-jobs", methods{http.MethodGet: s.admin(s.heldJobs)}.serve)
	s.mux.HandleFunc("/api/v1/audit", methods{http.MethodGet: s.admin(s.findings)}.serve)
	s.mux.HandleFunc("/api/v1/reports", methods{http.MethodGet: s.admin(s.morningReports)}.serve)
	s.mux.HandleFunc("/api/v1/reports/{day}", methods{http.MethodGet: s.admin(s.morningReport)}.serve)
	if s.o.Console != nil {
		s.mux.HandleFunc("/api/v1/console/{$}", methods{http.MethodGet: s.o.Console.ServeHTTP}.serve)
		s.mux.HandleFunc("/api/v1/console", methods{http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
			u := *r.URL
			u.Path += "/"
			w.Header().Set("Location", u.RequestURI())
			w.WriteHeader(http.StatusMovedPermanently)
		}}.serve)
	}
	s.documentRoutes()
	s.mux.HandleFunc("/", s.notFound)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"status":         "ok",
		"uptime_seconds": int(time.Since(s.o.Started).Seconds()),
	})
}

func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.o.Build)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+clip(r.URL.Path))
}
