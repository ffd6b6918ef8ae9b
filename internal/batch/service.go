package batch

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/tenant"
)

// Errors of the stores, and of the service's callers.
var (
	// ErrNotFound: no such job (for this tenant).
	ErrNotFound = errors.New("job not found")
	// ErrConflict: the job changed since it was read (ETag).
	ErrConflict = errors.New("job changed concurrently")
	// ErrDuplicate: the tenant's idempotency key belongs to a job already.
	ErrDuplicate = errors.New("idempotency key in use")
)

// DuplicateError names the job that holds an idempotency key.
type DuplicateError struct {
	JobID       string
	Fingerprint string
}

func (e *DuplicateError) Error() string { return "idempotency key in use by job " + e.JobID }

// Is makes errors.Is(err, ErrDuplicate) hold.
func (e *DuplicateError) Is(target error) bool { return target == ErrDuplicate }

// ActiveRef points at a job the poller must look at.
type ActiveRef struct {
	Tenant string
	ID     string
	Since  time.Time
}

// JobStore keeps jobs (package tablestore's Jobs).
type JobStore interface {
	// Create stores a new job and, if job.IdempotencyKey is set, the key
	// with fingerprint, atomically; a taken key is a *DuplicateError.
	Create(ctx context.Context, job Job, fingerprint string) (Job, error)
	// Get returns the job with its ETag, or ErrNotFound.
	Get(ctx context.Context, tenantID, id string) (Job, error)
	// Update replaces the job if its ETag still matches (else ErrConflict)
	// and returns it with the new ETag.
	Update(ctx context.Context, job Job) (Job, error)
	// List returns up to limit of the tenant's jobs, newest first, after
	// the job id after (""), in state (""=all).
	List(ctx context.Context, tenantID string, state State, after string, limit int) ([]Job, error)
	// FindKey returns the job holding an idempotency key, or ErrNotFound.
	FindKey(ctx context.Context, tenantID, key string) (jobID, fingerprint string, err error)
	// MarkActive, Unmark and ListActive keep the poller's index of jobs
	// with work left.
	MarkActive(ctx context.Context, tenantID, id string) error
	Unmark(ctx context.Context, id string) error
	ListActive(ctx context.Context) ([]ActiveRef, error)
	// Unfinished returns, with their ETags, the tenant's jobs from newest
	// to oldest (job ids, both included) that are not harvested.
	Unfinished(ctx context.Context, tenantID, newest, oldest string) ([]Job, error)
}

// Blobs is platform storage (package blobstore's Store).
type Blobs interface {
	Create(ctx context.Context, container, name string, metadata map[string]string) (object.Writer, error)
	// CreateSized is Create with the writer's own block size.
	CreateSized(ctx context.Context, container, name string, metadata map[string]string, blockSize int64) (object.Writer, error)
	Open(ctx context.Context, container, name string) (io.ReadCloser, object.Info, error)
	OpenAt(ctx context.Context, container, name string, offset int64) (io.ReadCloser, error)
	Stat(ctx context.Context, container, name string) (object.Info, error)
	Delete(ctx context.Context, container, name string) error
	DeletePrefix(ctx context.Context, container, prefix string) error
}

// Azure is the resource's Files and Batches API (package azopenai's BatchClient).
type Azure interface {
	UploadFile(ctx context.Context, filename string, body io.Reader, size int64) (AzureFile, error)
	AwaitFile(ctx context.Context, id string, interval time.Duration) (AzureFile, error)
	FindFile(ctx context.Context, filename string) (AzureFile, bool, error)
	CreateBatch(ctx context.Context, s Submission) (Created, error)
	GetBatch(ctx context.Context, id string) (AzureBatch, error)
	ListBatchStates(ctx context.Context, ids []string, since time.Time) (map[string]AzureBatch, error)
	CancelBatch(ctx context.Context, id string) (AzureBatch, error)
	OpenFileContent(ctx context.Context, id string) (io.ReadCloser, error)
	DeleteFile(ctx context.Context, id string) error
}

// Ledger records usage (package tablestore's Ledger).
type Ledger interface {
	Record(ctx context.Context, e ledger.Entry) error
}

// Budgets checks a tenant's monthly budget (package ledger's Budgets).
type Budgets interface {
	Check(ctx context.Context, t tenant.Tenant, m ledger.Month, additional int64) error
}

// Containers name the blob containers the service uses.
type Containers struct {
	// Inputs holds each part's JSONL and index: {tenant}/{job}/part-N.*.
	Inputs string
	// Results holds copies of Azure's output and error files and the
	// per-item results: {tenant}/{job}/part-N.*.
	Results string
	// Uploads is where tenants place large corpora, each under its own
	// {tenant}/ prefix.
	Uploads string
}

// Default names and limits.
const (
	DefaultInputsContainer  = "batch-inputs"
	DefaultResultsContainer = "batch-results"
	DefaultUploadsContainer = "batch-uploads"

	DefaultPollInterval     = time.Minute // Azure: poll no more often
	DefaultLeaseTTL         = 10 * time.Minute
	DefaultConcurrency      = 16
	DefaultAdmitConcurrency = 4
	DefaultMaxAdmitPerTick  = 100
	DefaultBackoffBase      = 30 * time.Second
	DefaultBackoffMax       = 30 * time.Minute

	// BlockSize is the block size to give the blob store of Options.Blobs
	// (package blobstore's default is 4 MiB). A harvest writes two blobs
	// at once (Azure's output and the results) and a tick harvests up to
	// Concurrency jobs: with 1 MiB blocks a harvest's upload buffers take
	// 4 MiB, not 16, and its peak memory does not grow with the output.
	BlockSize               = 1 << 20
	DefaultAgeLimit         = 2 * time.Hour
	DefaultHeldAlert        = 6 * time.Hour
	DefaultOverdueMargin    = 2 * time.Hour
	DefaultCompletionWindow = 24 * time.Hour
	DefaultExpiryWarning    = 3 * 24 * time.Hour
	DefaultRealert          = 6 * time.Hour
	DefaultMaxItems         = 1_000_000
	DefaultMaxParts         = 60
	DefaultMaxInputBytes    = 1 << 30
	DefaultCompletionTokens = 1024
	DefaultCoolOff          = 10 * time.Minute
	DefaultCoolOffFailures  = 2
)

// Options are the Service's dependencies and settings. Zero settings take
// the defaults above.
type Options struct {
	Jobs       JobStore
	Blobs      Blobs
	Azure      Azure
	Ledger     Ledger
	Budgets    Budgets
	Catalog    *catalog.Catalog
	Alerts     Alerter
	Containers Containers
	// Quota is the enqueued-token limit per deployment, as configured
	// (OFFPATH_BATCH_QUOTA); a deployment it does not name takes the
	// catalog's enqueued_token_quota. Azure's reported limit, when lower,
	// wins. A deployment without one is limited only by Azure's refusals.
	Quota map[string]int64
	// PollInterval is the least time between two polls of one Azure batch.
	PollInterval time.Duration
	// PollMaxInterval bounds the time between two polls of a batch whose
	// expected progress stretches it (cadence.go); default 15 times
	// PollInterval.
	PollMaxInterval time.Duration
	// LeaseTTL is how long a poller's claim on a job lasts; a crashed
	// poller's work is taken over after it. Keep it above the invocation
	// timeout.
	LeaseTTL time.Duration
	// Concurrency bounds the jobs one poll tick works on at once;
	// AdmitConcurrency the uploads and creates.
	Concurrency      int
	AdmitConcurrency int
	// MaxAdmitPerTick bounds the parts one tick submits.
	MaxAdmitPerTick int
	// BackoffBase and BackoffMax shape the wait after Azure refuses a part:
	// base × 2^(refusals−1), at most max, with jitter.
	BackoffBase, BackoffMax time.Duration
	// AgeLimit: a part held longer than this reserves its deployment's
	// freed capacity; nothing else is admitted there until it fits.
	AgeLimit time.Duration
	// HeldAlert raises held_too_long; OverdueMargin is added to the
	// completion window before batch_overdue; ExpiryWarning is how early
	// before Azure deletes unharvested output output_expiring_unharvested
	// is raised; Realert is the least time between two alerts of one kind
	// for one job.
	HeldAlert, OverdueMargin, ExpiryWarning, Realert time.Duration
	// CompletionWindow is Azure's (24 h).
	CompletionWindow time.Duration
	// OutputExpiry is the output_expires_after the batches are created with
	// (package azopenai's BatchConfig.OutputExpiry). Default DefaultOutputExpiry.
	OutputExpiry time.Duration
	// PartLimits split inputs into parts (default Azure's limits, lowered
	// so that a part fits its deployment's quota).
	PartLimits batchfile.Limits
	// MaxItems, MaxParts and MaxInputBytes bound one job. A referenced
	// corpus is read within the submitting request, so MaxInputBytes
	// (default 1 GiB, a minute or so) also bounds how long that takes.
	MaxItems      int
	MaxParts      int
	MaxInputBytes int64
	// CompletionTokens is the completion allowance per item, for the budget
	// estimate, when an item sets no max_tokens.
	CompletionTokens int
	// CoolOff is how long a deployment is skipped, for parts that have
	// another, after Azure refused a part there for quota
	// (token_limit_exceeded, at create or in validation) or after
	// CoolOffFailures creates in a row failed there (5xx, connection).
	CoolOff         time.Duration
	CoolOffFailures int
	// Decisions, if set, counts the scheduler's placements and cool-offs
	// (package tokenmetrics' Prometheus).
	Decisions Decisions
	// Pack packs small jobs into shared batches (off unless MaxItems is
	// set; see the package documentation, "Packing").
	Pack PackOptions
	// Announcer, if set, is told of each job as it becomes harvested, as
	// held_too_long is raised for it and as a part's deadline fallback
	// starts (package webhook's Announcer),
	// within a few seconds; its failure is logged, never the poll tick's.
	Announcer Announcer
	// Sync, if set, is the queue path's synchronous client (package azopenai,
	// paced by a ratelimit.Capped): the items of parts that cannot finish
	// by their job's CompleteBy run through it, on the alias's queue
	// deployment. Without it, deadlines are recorded but not acted on.
	Sync Sync
	// CancelAllowance, StartAllowance, SlowAfter and FallbackRate shape
	// the deadline rule (see Service.risk); FallbackConcurrency bounds the
	// synchronous requests of one part at once, FallbackSlice the time one
	// tick spends on one part's fallback.
	CancelAllowance, StartAllowance, SlowAfter time.Duration
	FallbackRate, FallbackConcurrency          int
	FallbackSlice                              time.Duration
	// Now is the clock; Rand makes job ids.
	Now  func() time.Time
	Rand io.Reader
}

// Announcer is told of a job that has just been harvested or found held
// too long.
type Announcer interface {
	Announce(ctx context.Context, j Job) error
}

// Service runs offpath's batch jobs: submission, reading, cancelling and
// the poll tick. It keeps no state between calls: everything lives in the
// stores, so any instance can serve any call and a restart loses nothing.
type Service struct {
	o Options
	// rank orders every batch deployment of the catalog as the scheduler
	// prefers it (catalog.BatchRank).
	rank map[string]int
	// cool are the deployments' cool-offs and failure counts: this
	// instance's own (see coolOff).
	coolMu sync.Mutex
	cool   map[string]coolState
}

// New checks the dependencies and returns the service.
func New(o Options) (*Service, error) {
	var errs []error
	if o.Jobs == nil || o.Blobs == nil || o.Azure == nil || o.Ledger == nil || o.Budgets == nil {
		errs = append(errs, errors.New("jobs, blobs, azure, ledger and budgets are required"))
	}
	if o.Catalog == nil {
		errs = append(errs, errors.New("catalog is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("batch service: %w", err)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.Alerts == nil {
		o.Alerts = LogAlerter{}
	}
	if o.Containers.Inputs == "" {
		o.Containers.Inputs = DefaultInputsContainer
	}
	if o.Containers.Results == "" {
		o.Containers.Results = DefaultResultsContainer
	}
	if o.Containers.Uploads == "" {
		o.Containers.Uploads = DefaultUploadsContainer
	}
	def(&o.PollInterval, DefaultPollInterval)
	def(&o.PollMaxInterval, 15*o.PollInterval)
	o.PollMaxInterval = max(o.PollMaxInterval, o.PollInterval)
	def(&o.LeaseTTL, DefaultLeaseTTL)
	defInt(&o.Concurrency, DefaultConcurrency)
	defInt(&o.AdmitConcurrency, DefaultAdmitConcurrency)
	defInt(&o.MaxAdmitPerTick, DefaultMaxAdmitPerTick)
	def(&o.BackoffBase, DefaultBackoffBase)
	def(&o.BackoffMax, DefaultBackoffMax)
	def(&o.AgeLimit, DefaultAgeLimit)
	def(&o.HeldAlert, DefaultHeldAlert)
	def(&o.OverdueMargin, DefaultOverdueMargin)
	def(&o.ExpiryWarning, DefaultExpiryWarning)
	def(&o.Realert, DefaultRealert)
	def(&o.CompletionWindow, DefaultCompletionWindow)
	def(&o.OutputExpiry, DefaultOutputExpiry)
	defInt(&o.MaxItems, DefaultMaxItems)
	defInt(&o.MaxParts, DefaultMaxParts)
	defInt(&o.CompletionTokens, DefaultCompletionTokens)
	if o.MaxInputBytes <= 0 {
		o.MaxInputBytes = DefaultMaxInputBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.setDeadlineDefaults()
	def(&o.CoolOff, DefaultCoolOff)
	defInt(&o.CoolOffFailures, DefaultCoolOffFailures)
	if o.Pack.MaxItems > 0 {
		if o.Pack.MaxTokens <= 0 {
			o.Pack.MaxTokens = DefaultPackMaxTokens
		}
		def(&o.Pack.Window, DefaultPackWindow)
		defInt(&o.Pack.TargetLines, DefaultPackTargetLines)
		defInt(&o.Pack.MaxMembers, DefaultPackMaxMembers)
	}
	// A deployment's quota is the setting's, else what the catalog states.
	quota := maps.Clone(o.Quota)
	if quota == nil {
		quota = map[string]int64{}
	}
	for _, a := range o.Catalog.Aliases() {
		for _, d := range a.Batch {
			if _, set := quota[d.Name]; !set && d.EnqueuedTokenQuota > 0 {
				quota[d.Name] = d.EnqueuedTokenQuota
			}
		}
	}
	o.Quota = quota
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	return &Service{o: o, rank: batchRanks(o.Catalog), cool: map[string]coolState{}}, nil
}

// now is the service's clock in UTC.
func (s *Service) now() time.Time { return s.o.Now().UTC() }
