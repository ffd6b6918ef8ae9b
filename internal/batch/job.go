package batch

import (
	"time"

	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/ledger"
)

// State is an offpath job's state (see the package documentation).
type State string

// The job states.
const (
	Accepted  State = "accepted"
	Held      State = "held"
	Submitted State = "submitted"
	Completed State = "completed"
	Failed    State = "failed"
	Expired   State = "expired"
	Cancelled State = "cancelled"
	Harvested State = "harvested"
)

// States lists every state, in life-cycle order.
func States() []State {
	return []State{Accepted, Held, Submitted, Completed, Failed, Expired, Cancelled, Harvested}
}

// ParseState returns the State named s.
func ParseState(s string) (State, bool) {
	for _, st := range States() {
		if string(st) == s {
			return st, true
		}
	}
	return "", false
}

// PartStatus is where one part (one Azure batch) is.
type PartStatus string

// The part statuses.
const (
	// PartPending: written, not yet admitted (or held by the quota, or
	// backing off after a refusal).
	PartPending PartStatus = "pending"
	// PartSubmitted: an Azure batch exists and is not finished.
	PartSubmitted PartStatus = "submitted"
	// PartDone: the Azure batch is terminal with its files, or the part
	// ended without one (cancelled before admission, refused for good);
	// waiting for the harvest.
	PartDone PartStatus = "done"
	// PartHarvested: results written and usage recorded.
	PartHarvested PartStatus = "harvested"
	// PartFallback: the part could no longer finish by its job's
	// complete_by; what its batch did is harvested and the rest of its
	// items run synchronously (see deadline.go).
	PartFallback PartStatus = "fallback"
)

// Outcome of one item, as the results file reports it.
type Outcome string

// The item outcomes. Every item ends in exactly one.
const (
	OK               Outcome = "ok"
	Refused          Outcome = "refused"
	FailedOutcome    Outcome = "failed"
	ExpiredOutcome   Outcome = "expired"
	CancelledOutcome Outcome = "cancelled"
)

// Counts are items by outcome.
type Counts struct {
	OK        int64 `json:"ok"`
	Refused   int64 `json:"refused"`
	Failed    int64 `json:"failed"`
	Expired   int64 `json:"expired"`
	Cancelled int64 `json:"cancelled"`
}

// Total is the number of items counted.
func (c Counts) Total() int64 { return c.OK + c.Refused + c.Failed + c.Expired + c.Cancelled }

func (c *Counts) add(o Counts) {
	c.OK += o.OK
	c.Refused += o.Refused
	c.Failed += o.Failed
	c.Expired += o.Expired
	c.Cancelled += o.Cancelled
}

func (c *Counts) inc(o Outcome) {
	switch o {
	case OK:
		c.OK++
	case Refused:
		c.Refused++
	case ExpiredOutcome:
		c.Expired++
	case CancelledOutcome:
		c.Cancelled++
	default:
		c.Failed++
	}
}

// Meter adds one line of an output or error file to u, as the harvest
// bills it, and returns the line's outcome. A line Azure ran (answered,
// refused, or failed with an HTTP response) is a request, with its usage;
// a refusal is also a refusal. A line the completion window or a
// cancellation cut off, or that never got a response, consumed nothing.
// The second-door audit bills batches offpath did not create with it.
func Meter(u *ledger.Usage, res *batchfile.Result) Outcome {
	o := outcomeOf(res)
	if o == OK || o == Refused || (o == FailedOutcome && res.StatusCode != 0) {
		u.Requests++
		u.Add(res.Usage)
		if o == Refused {
			u.Refusals++
		}
	}
	return o
}

// FileCopy is an Azure output or error file copied to platform storage.
type FileCopy struct {
	AzureFileID string `json:"azure_file_id"`
	Blob        string `json:"blob"`
	Bytes       int64  `json:"bytes"`
	SHA256      string `json:"sha256"`
	// Source is SourceSync for the answers of a part's deadline fallback
	// (not a file of Azure's; AzureFileID empty).
	Source string `json:"source,omitempty"`
}

// Part is one input file of a job and the Azure batch made from it.
type Part struct {
	Index int `json:"index"`
	// Deployment is where the part runs (or will be tried next): the
	// scheduler's choice, and the deployment its ledger row names.
	Deployment string `json:"deployment"`
	// WrittenFor is the deployment the stored input names in body.model,
	// when the part has since moved to another (empty: Deployment). A
	// moved part is uploaded again with its new deployment's name.
	WrittenFor string `json:"written_for,omitempty"`
	// Placement says why the part is on Deployment (PlaceCheapest, ...),
	// PlacementDetail in words; set when the part is submitted there.
	Placement       string `json:"placement,omitempty"`
	PlacementDetail string `json:"placement_detail,omitempty"`
	Lines           int    `json:"lines"`
	Bytes           int64  `json:"bytes"`
	EstimatedTokens int64  `json:"estimated_tokens"`
	// InputBlob and IndexBlob are in the inputs container.
	InputBlob string `json:"input_blob"`
	IndexBlob string `json:"index_blob"`

	Status PartStatus `json:"status"`
	// HeldReason says why a pending part waits: "quota" (offpath's own
	// accounting), "token_limit_exceeded" (Azure refused), "retry" (a
	// transient failure); empty before the first admission attempt.
	HeldReason    string    `json:"held_reason,omitempty"`
	HeldSince     time.Time `json:"held_since,omitzero"`
	Attempt       int       `json:"attempt"`
	Refusals      int       `json:"refusals,omitempty"`
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	// MaybeCreated: the last upload's or create's outcome is unknown: the
	// next admission looks for the part's input file by name before
	// uploading (creates always look their batch up first).
	MaybeCreated bool `json:"maybe_created,omitempty"`

	InputFileID string `json:"input_file_id,omitempty"`
	BatchID     string `json:"batch_id,omitempty"`
	// PreviousBatchIDs are earlier attempts Azure failed with
	// token_limit_exceeded (kept for audits).
	PreviousBatchIDs []string `json:"previous_batch_ids,omitempty"`
	// AzureStatus is the batch's status as last polled.
	AzureStatus   AzureStatus   `json:"azure_status,omitempty"`
	RequestCounts RequestCounts `json:"request_counts"`
	Errors        []BatchError  `json:"errors,omitempty"`
	OutputFileID  string        `json:"output_file_id,omitempty"`
	ErrorFileID   string        `json:"error_file_id,omitempty"`
	// MaxEnqueuedTokens is the deployment's limit as Azure last reported it
	// (0: not reported).
	MaxEnqueuedTokens int64 `json:"max_enqueued_tokens,omitempty"`

	SubmittedAt time.Time `json:"submitted_at,omitzero"`
	AzureExpiry time.Time `json:"azure_expires_at,omitzero"`
	PolledAt    time.Time `json:"polled_at,omitzero"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	// OutputExpiresAt is when Azure deletes the output files.
	OutputExpiresAt time.Time `json:"output_expires_at,omitzero"`
	CancelSent      bool      `json:"cancel_sent,omitempty"`

	// Copied: the output and error files are in platform storage (Copies;
	// a pack's, split into its members' areas); the harvest never reads
	// Azure again.
	Copied bool       `json:"copied,omitempty"`
	Copies []FileCopy `json:"copies,omitempty"`
	// OutputLost: Azure no longer had the files when they were copied.
	OutputLost bool `json:"output_lost,omitempty"`
	// ResultsBlob is the per-item results file, in the results container:
	// gzip-compressed JSON lines (plain in parts harvested before), read
	// through OpenResultsFile.
	ResultsBlob string       `json:"results_blob,omitempty"`
	HarvestedAt time.Time    `json:"harvested_at,omitzero"`
	Counts      Counts       `json:"counts"`
	Usage       ledger.Usage `json:"usage"`
	// Mismatch explains a difference between the lines read and Azure's
	// request_counts (empty when they agree).
	Mismatch string `json:"mismatch,omitempty"`
	// HarvestErrors counts harvest attempts that failed, for alerting.
	HarvestErrors int `json:"harvest_errors,omitempty"`
	// Fallback is set once the part was found unable to finish by the
	// job's CompleteBy (see deadline.go).
	Fallback *Fallback `json:"fallback,omitempty"`
	// Pack is the pack the part's lines were put in (see pack.go), and
	// PackedAt when; the pack submits, polls and copies them, and hands
	// the part its own lines when the pack's batch has ended.
	Pack     string    `json:"pack,omitempty"`
	PackedAt time.Time `json:"packed_at,omitzero"`
}

// azureTerminal reports whether the part's batch finished at Azure.
func (p *Part) azureTerminal() bool { return p.AzureStatus.Terminal() }

// Lease says which poller is working on a job and until when.
type Lease struct {
	Owner string    `json:"owner,omitempty"`
	Until time.Time `json:"until,omitzero"`
}

// Job is a tenant's batch request: items written to one or more parts,
// each an Azure batch.
type Job struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	Alias  string `json:"alias"`
	// DataZone is the data zone the tenant required when the job was
	// submitted: its parts only go to deployments of that zone.
	DataZone string `json:"data_zone,omitempty"`
	State    State  `json:"state"`
	// Final is, once every part has ended, how the job ended: completed,
	// failed, expired or cancelled (kept when State becomes harvested).
	Final    State             `json:"final,omitempty"`
	Created  time.Time         `json:"created"`
	Updated  time.Time         `json:"updated"`
	Items    int               `json:"items"`
	Source   string            `json:"source"` // "inline" or the input blob
	Metadata map[string]string `json:"metadata,omitempty"`
	// Attributes are the submitting door's own (Request.Attributes).
	Attributes map[string]string `json:"attributes,omitempty"`
	// EstimatedTokens is what the budget was checked against: the input's
	// enqueued-token estimate plus the completion allowance.
	EstimatedTokens int64  `json:"estimated_tokens"`
	IdempotencyKey  string `json:"idempotency_key,omitempty"`
	// CompleteBy is when the tenant needs the answers (zero: no
	// deadline); parts that can no longer finish by then fall back to the
	// synchronous deployment (see deadline.go).
	CompleteBy time.Time `json:"complete_by,omitzero"`
	// Urgent: the tenant asked for the job to be submitted on its own,
	// never held to be packed with others.
	Urgent bool `json:"urgent,omitempty"`
	// Pack is set on a pack's own row (tenant PackTenant): its members.
	Pack *Pack `json:"pack,omitempty"`

	CancelRequested   bool      `json:"cancel_requested,omitempty"`
	CancelRequestedAt time.Time `json:"cancel_requested_at,omitzero"`
	HarvestedAt       time.Time `json:"harvested_at,omitzero"`
	Parts             []Part    `json:"parts"`
	Lease             Lease     `json:"lease,omitzero"`
	// Alerts remembers when each alert was last raised for the job, so
	// that a condition seen on every poll alerts once per interval.
	Alerts map[string]time.Time `json:"alerts,omitempty"`
	// Cleanup lists Azure files still to delete after the harvest.
	Cleanup []string `json:"cleanup,omitempty"`
	// CleanupBlobs lists prefixes of blobs in the results container still
	// to delete (a deadline fallback's kept answers, once its part is
	// harvested).
	CleanupBlobs []string `json:"cleanup_blobs,omitempty"`

	// ETag is the stored row's version, set by the store.
	ETag string `json:"-"`
}

// Month is the ledger month the job's usage belongs to: its creation's.
func (j *Job) Month() ledger.Month { return ledger.MonthOf(j.Created) }

// Counts sums the parts' harvested counts.
func (j *Job) Counts() Counts {
	var c Counts
	for i := range j.Parts {
		c.add(j.Parts[i].Counts)
	}
	return c
}

// Usage sums the parts' harvested usage, their fallbacks' included.
func (j *Job) Usage() ledger.Usage {
	var u ledger.Usage
	for i := range j.Parts {
		u.Add(j.Parts[i].Usage)
		if f := j.Parts[i].Fallback; f != nil {
			u.Add(f.Usage)
		}
	}
	return u
}

// Active reports whether the poller still has work on the job.
func (j *Job) Active() bool {
	return j.State != Harvested || len(j.Cleanup) > 0 || len(j.CleanupBlobs) > 0
}

// derive recomputes State and Final from the parts.
func (j *Job) derive() {
	var pending, submitted, done, harvested, attempted int
	for i := range j.Parts {
		p := &j.Parts[i]
		switch p.Status {
		case PartPending:
			pending++
			if p.HeldReason != "" {
				attempted++
			}
		case PartSubmitted, PartFallback:
			submitted++
		case PartDone:
			if f := p.Fallback; f != nil && f.FinishedAt.IsZero() {
				submitted++ // its batch has ended; its deadline fallback has not
			} else {
				done++
			}
		case PartHarvested:
			harvested++
		}
	}
	switch {
	case len(j.Parts) > 0 && harvested == len(j.Parts):
		j.Final = j.final()
		j.State = Harvested
	case submitted > 0 || (pending > 0 && done+harvested > 0):
		j.State, j.Final = Submitted, ""
	case pending > 0 && attempted > 0:
		j.State, j.Final = Held, ""
	case pending > 0:
		j.State, j.Final = Accepted, ""
	default:
		j.Final = j.final()
		j.State = j.Final
	}
}

// final is how a job whose parts have all ended ended: failed or expired
// if any part did, cancelled if a part was cancelled (or the tenant's
// cancellation cut anything short), else completed.
func (j *Job) final() State {
	st := Completed
	for i := range j.Parts {
		if f := j.Parts[i].Fallback; f != nil && !f.FinishedAt.IsZero() {
			continue // what its batch did not do, the fallback did
		}
		switch j.Parts[i].AzureStatus {
		case AzureFailed:
			return Failed
		case AzureExpired:
			st = Expired
		case AzureCancelled:
			if st == Completed {
				st = Cancelled
			}
		}
	}
	if j.CancelRequested && st != Completed {
		return Cancelled // what was cut short was cut short by the tenant
	}
	return st
}

// leasedByOther reports whether someone else holds a live lease.
func (j *Job) leasedByOther(owner string, now time.Time) bool {
	return j.Lease.Owner != "" && j.Lease.Owner != owner && now.Before(j.Lease.Until)
}
