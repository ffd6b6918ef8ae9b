package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tenant"
)

// AlertSecondDoor is the name of every alert the audit raises: a batch or
// a file on the resource that offpath did not create.
const AlertSecondDoor = "second_door"

// Unattributed is the tenant the usage of batches offpath did not create
// is booked under. The audit creates it, suspended and without keys or
// aliases, so that nobody can use it but the admin's usage report shows it.
const Unattributed = "unattributed"

// Unknown is the alias, and the deployment, of usage whose deployment the
// catalog does not name (or could not be read): it is booked at zero cost.
const Unknown = "unknown"

// DefaultMinAge is the age under which no file is deleted, nor alerted.
const DefaultMinAge = time.Hour

// Azure is the resource's Files and Batches API (package azopenai's BatchClient).
type Azure interface {
	ListBatches(ctx context.Context) iter.Seq2[batch.AzureBatch, error]
	ListFiles(ctx context.Context, purpose string) iter.Seq2[batch.AzureFile, error]
	GetFile(ctx context.Context, id string) (batch.AzureFile, error)
	OpenFileContent(ctx context.Context, id string) (io.ReadCloser, error)
	DeleteFile(ctx context.Context, id string) error
}

// Active is the poller's index of jobs with work left (package
// tablestore's Jobs).
type Active interface {
	ListActive(ctx context.Context) ([]batch.ActiveRef, error)
}

// Store remembers what was alerted and booked (package tablestore's
// Audit).
type Store interface {
	// Load returns every record of a kind, by Azure id: one query.
	Load(ctx context.Context, kind Kind) (map[string]Record, error)
	// Put writes a record, replacing the one with the same kind and id.
	Put(ctx context.Context, r Record) error
}

// Ledger records usage (package tablestore's Ledger).
type Ledger interface {
	Record(ctx context.Context, e ledger.Entry) error
}

// Tenants finds and creates the Unattributed tenant (package tablestore's
// Tenants).
type Tenants interface {
	Get(ctx context.Context, id string) (tenant.Tenant, error)
	Create(ctx context.Context, t tenant.Tenant) error
}

// Alerter raises alerts (package alert's Sender).
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Options are the Auditor's dependencies and settings.
type Options struct {
	Azure  Azure
	Active Active
	// Jobs are offpath's job rows: a batch carrying offpath's submission
	// key is offpath's only if its job claims it.
	Jobs    Jobs
	Store   Store
	Ledger  Ledger
	Tenants Tenants
	// Catalog maps a batch deployment to its alias and price.
	Catalog *catalog.Catalog
	// Alerts raises second_door (default: log events only).
	Alerts Alerter
	// Now is the clock (default time.Now). It should agree with Azure's:
	// file ages are measured from the created times Azure reports.
	Now func() time.Time
	// MinAge protects young files: none younger is deleted (a job marked
	// active may be about to use it) or alerted (a batch may be about to
	// be created on it). Default DefaultMinAge.
	MinAge time.Duration
}

// Auditor runs the second-door audit. It keeps no state between runs:
// what it has alerted and booked lives in the Store.
type Auditor struct {
	o Options
}

// New checks the dependencies and returns the Auditor.
func New(o Options) (*Auditor, error) {
	if o.Azure == nil || o.Active == nil || o.Jobs == nil || o.Store == nil || o.Ledger == nil || o.Tenants == nil || o.Catalog == nil {
		return nil, errors.New("audit: azure, active, jobs, store, ledger, tenants and catalog are required")
	}
	if o.Alerts == nil {
		o.Alerts = batch.LogAlerter{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MinAge <= 0 {
		o.MinAge = DefaultMinAge
	}
	return &Auditor{o: o}, nil
}

// Kind says what a Record is about.
type Kind string

// The kinds.
const (
	KindBatch Kind = "batch"
	KindFile  Kind = "file"
)

// Record is what the audit remembers about one batch or file offpath did
// not create: that it was alerted and, for a batch, that its usage was
// booked. It holds ids, times and counts, never content.
type Record struct {
	Kind Kind
	// ID is the Azure batch or file id.
	ID        string
	AlertedAt time.Time
	// CreatedAt is Azure's created time.
	CreatedAt time.Time

	// A batch's status when last seen, and its files: they are named in
	// its alert and never alerted on their own.
	Status                                 string
	InputFileID, OutputFileID, ErrorFileID string
	// BookedAt is when the ended batch's usage went to the ledger, under
	// Alias and Deployment; zero until then. Note says what was missing
	// (output gone, deployment unknown), if anything.
	BookedAt          time.Time
	Alias, Deployment string
	Usage             ledger.Usage
	Note              string

	// A file's name, purpose and size.
	Filename, Purpose string
	Bytes             int64

	// Job is set for an orphaned batch: the offpath job its submission key
	// names. Tenant is the tenant its usage is booked to (its metadata's,
	// if that tenant exists, else Unattributed), decided before the first
	// booking; empty for other batches, which go to Unattributed. An
	// orphaned pack's is Unattributed, where its lines whose job is not
	// found go; the others go to their jobs' tenants, as its Note says.
	Job, Tenant string
}

// Summary counts what one run saw and did.
type Summary struct {
	// Batches on the resource; those offpath created and a job claims;
	// those carrying offpath's key that no job claims (orphans); the
	// others; and of orphans and others, the ones alerted and the ones
	// booked in this run.
	Batches, Offpath, Orphans, Unknown, Alerted, Booked int
	// Files on the resource; unknown files alerted in this run; offpath's
	// leftovers deleted in this run.
	Files, FilesAlerted, Deleted int
	// Errors are per-item failures (logged, retried next run).
	Errors int
}

// LedgerUnit is the ledger unit of a batch offpath did not create: the same
// on every booking, so that booking again rewrites the same row.
func LedgerUnit(batchID string) string { return "second-door:" + batchID }

// OrphanUnit is the ledger unit of an orphaned batch, likewise.
func OrphanUnit(batchID string) string { return "orphan:" + batchID }

// now is the audit's clock in UTC.
func (a *Auditor) now() time.Time { return a.o.Now().UTC() }

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("second-door audit: %s: %w", what, err)
}
