package nightly

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/report"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/tickets"
)

// Alert and event names, stable for the alert rules.
const (
	// AlertReportMissing: the day's report is not written at the deadline.
	AlertReportMissing = "morning_report_missing"
	// AlertRunFailed: a nightly run failed; nothing was submitted, or the
	// submitted job is not recorded yet (the next firing adopts it).
	AlertRunFailed = "nightly_failed"
	// EventReportWritten is logged (as "event") when a report is written.
	EventReportWritten = "morning_report_written"
)

// Defaults.
const (
	DefaultTenant           = "support"
	DefaultAlias            = "summarize"
	DefaultSystemPrompt     = "Summarize the ticket in two sentences."
	DefaultMaxTokens        = 160
	DefaultReportsContainer = "reports"
	// BlockSize is the block size to give the blob store of Options.Blobs
	// (package blobstore's default is 4 MiB). The corpus and the index are
	// written while the collector reads ahead; with 1 MiB blocks their
	// upload buffers stay small and a night of 50,000 tickets stays well
	// under 100 MB.
	BlockSize = 1 << 20
	// DefaultReportLead is how long before the report deadline the day's
	// job must be complete: the report is written after the next poll tick.
	DefaultReportLead = 10 * time.Minute
)

// Batches is the control plane (package batch's Service).
type Batches interface {
	Submit(ctx context.Context, t tenant.Tenant, r batch.Request) (batch.Job, bool, error)
	JobByKey(ctx context.Context, tenantID, key string) (batch.Job, error)
	Get(ctx context.Context, tenantID, id string) (batch.Job, error)
	Results(ctx context.Context, tenantID, id string) (io.ReadCloser, batch.Job, bool, error)
}

// Tenants reads tenants (package tablestore's Tenants).
type Tenants interface {
	Get(ctx context.Context, id string) (tenant.Tenant, error)
}

// Blobs is platform storage (package blobstore's Store).
type Blobs interface {
	Create(ctx context.Context, container, name string, metadata map[string]string) (object.Writer, error)
	Open(ctx context.Context, container, name string) (io.ReadCloser, object.Info, error)
	Delete(ctx context.Context, container, name string) error
	List(ctx context.Context, container, prefix string) ([]string, error)
	DeletePrefix(ctx context.Context, container, prefix string) error
	SetContentType(ctx context.Context, container, name, contentType string) error
}

// Ledger reads a tenant's month (package tablestore's Ledger).
type Ledger interface {
	Month(ctx context.Context, tenantID string, m ledger.Month) ([]ledger.Entry, error)
}

// Alerter raises alerts (package alert's Sender).
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Options are the Service's dependencies and settings; zero settings take
// the defaults above.
type Options struct {
	// Tickets is the container the support system drops tickets into
	// (package blobstore's Container).
	Tickets   tickets.Blobs
	Collector tickets.Options

	Batches   Batches
	Tenants   Tenants
	Nights    Nights
	Summaries Summaries
	Blobs     Blobs
	Ledger    Ledger
	Alerts    Alerter
	Renderer  *report.Renderer

	// Tenant is the support tenant the jobs run for; Alias its model
	// alias; SystemPrompt leads every ticket; MaxTokens bounds a summary.
	Tenant       string
	Alias        string
	SystemPrompt string
	MaxTokens    int
	// Uploads is the control plane's uploads container (the corpus goes
	// into the tenant's area of it); Reports receives the reports.
	Uploads string
	Reports string

	// ReportDeadline, if set, returns the first report deadline after a
	// moment (the report-deadline timer's schedule): the day's job is
	// submitted with complete_by ReportLead before it, so that parts that
	// cannot finish in time fall back to the synchronous deployment and
	// the report is written on time whatever Azure does. Catalog prices
	// what the fallback cost over the batch price, for the report.
	ReportDeadline func(after time.Time) time.Time
	ReportLead     time.Duration
	Catalog        *catalog.Catalog
	// Now is the clock; Rand names runs.
	Now  func() time.Time
	Rand io.Reader
}

// Service runs the nights. It keeps no state between calls.
type Service struct {
	o Options
}

// New checks the dependencies and returns the service.
func New(o Options) (*Service, error) {
	if o.Tickets == nil || o.Batches == nil || o.Tenants == nil || o.Nights == nil || o.Summaries == nil ||
		o.Blobs == nil || o.Ledger == nil || o.Renderer == nil {
		return nil, errors.New("nightly service: tickets, batches, tenants, nights, summaries, blobs, ledger and renderer are required")
	}
	if o.Alerts == nil {
		o.Alerts = batch.LogAlerter{}
	}
	o.Tenant = cmp.Or(o.Tenant, DefaultTenant)
	if err := tenant.ValidateID(o.Tenant); err != nil {
		return nil, fmt.Errorf("nightly service: %w", err)
	}
	o.Alias = cmp.Or(o.Alias, DefaultAlias)
	o.SystemPrompt = cmp.Or(o.SystemPrompt, DefaultSystemPrompt)
	if o.MaxTokens <= 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.ReportLead <= 0 {
		o.ReportLead = DefaultReportLead
	}
	o.Uploads = cmp.Or(o.Uploads, batch.DefaultUploadsContainer)
	o.Reports = cmp.Or(o.Reports, DefaultReportsContainer)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	return &Service{o: o}, nil
}

func (s *Service) now() time.Time { return s.o.Now().UTC() }

// IdempotencyKey is the control plane key of a day's job.
func IdempotencyKey(day string) string { return "nightly-tickets-" + day }

// RunPrefix is where a run's files live in the uploads container.
func RunPrefix(tenantID, day, run string) string {
	return tenantID + "/nightly/" + day + "/" + run + "/"
}

// The files of a run, under RunPrefix.
const (
	corpusFile   = "tickets.jsonl"
	indexFile    = "index.jsonl"
	manifestFile = "manifest.json"
)
