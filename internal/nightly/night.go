package nightly

import (
	"context"
	"errors"
	"time"

	"github.com/offpath/offpath/internal/tickets"
)

// Errors of the stores.
var (
	// ErrNotFound: no record for the day.
	ErrNotFound = errors.New("night not found")
	// ErrExists: the day has a record already.
	ErrExists = errors.New("night already recorded")
	// ErrConflict: the record changed since it was read.
	ErrConflict = errors.New("night changed concurrently")
)

// Night is the record of one day's run.
type Night struct {
	Tenant string `json:"tenant"`
	// Day is the tickets' day, "yyyy-mm-dd".
	Day string `json:"day"`
	// Run names the run that collected the day; its files are under
	// RunPrefix in the uploads container.
	Run string `json:"run"`
	// JobID is the batch job, "" when the day had no new tickets.
	JobID     string    `json:"job_id,omitempty"`
	Collected Collected `json:"collected"`
	Created   time.Time `json:"created"`
	// HashesRecorded: the submitted tickets' hashes are in the summaries
	// record.
	HashesRecorded bool `json:"hashes_recorded,omitempty"`
	// ReportedAt is when the morning report was written (zero: not yet).
	ReportedAt time.Time `json:"reported_at,omitzero"`
	ReportHTML string    `json:"report_html,omitempty"`
	ReportMD   string    `json:"report_md,omitempty"`

	// ETag is the stored row's version, set by the store.
	ETag string `json:"-"`
}

// Collected sums up a day's collection.
type Collected struct {
	Files        int `json:"files"`
	Tickets      int `json:"tickets"`
	New          int `json:"new"`
	Unchanged    int `json:"unchanged"`
	Duplicates   int `json:"duplicates"`
	SkippedTotal int `json:"skipped_total"`
}

func collected(r tickets.Result, sv *sieve) Collected {
	return Collected{Files: r.Files, Tickets: r.Tickets, New: sv.New, Unchanged: sv.Unchanged,
		Duplicates: r.Duplicates, SkippedTotal: r.SkippedTotal}
}

// Reported reports whether the day's report is written.
func (n *Night) Reported() bool { return !n.ReportedAt.IsZero() }

// DayOf returns the day a run at t summarises: the UTC date before t's.
func DayOf(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d-1, 0, 0, 0, 0, time.UTC)
}

// dayName formats a day as the record and the blobs name it.
func dayName(day time.Time) string { return day.Format(time.DateOnly) }

// Nights keeps the days' records (package tablestore's Nights).
type Nights interface {
	// Get returns the tenant's record of day, or ErrNotFound.
	Get(ctx context.Context, tenantID, day string) (Night, error)
	// Create stores a new record, or returns ErrExists.
	Create(ctx context.Context, n Night) (Night, error)
	// Update replaces the record if its ETag still matches (else
	// ErrConflict) and returns it with the new ETag.
	Update(ctx context.Context, n Night) (Night, error)
	// Unreported returns the tenant's records whose report is not written.
	Unreported(ctx context.Context, tenantID string) ([]Night, error)
}

// Summaries keeps, per tenant and ticket, the hash of the version last
// submitted for summary (package tablestore's Summaries).
type Summaries interface {
	// Lookup returns the recorded hash of each of ids that has one.
	Lookup(ctx context.Context, tenantID string, ids []string) (map[string]string, error)
	// Record writes the hashes of submitted tickets; writing the same
	// ones again is harmless.
	Record(ctx context.Context, tenantID, jobID string, s []Submitted) error
}

// Submitted is a ticket sent for summary, as the summaries record keeps it.
type Submitted struct {
	ID   string
	Hash string
}
