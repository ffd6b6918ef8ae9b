package report

import (
	"errors"
	"fmt"
	"time"

	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
)

// Outcome is how one ticket's request in the batch job ended.
type Outcome string

// The outcomes. Expired and Cancelled are the lines a job that ended early
// never answered; they are listed with the failures.
const (
	OK        Outcome = "ok"
	Refused   Outcome = "refused"
	Failed    Outcome = "failed"
	Expired   Outcome = "expired"
	Cancelled Outcome = "cancelled"
)

func (o Outcome) valid() bool {
	switch o {
	case OK, Refused, Failed, Expired, Cancelled:
		return true
	}
	return false
}

// Report is everything the morning report shows. The counts are derived
// from Items and Skipped, so they always agree with the lists.
type Report struct {
	// Day is the day whose tickets the job summarised (its date is shown).
	Day time.Time
	// JobID is offpath's job id, shown so that the report can be traced.
	JobID string
	// Tenant is the tenant the job ran for.
	Tenant string
	// Generated is when the report was written.
	Generated time.Time

	// Items are the tickets in the job, in the order to show them.
	Items []Item
	// Skipped are the documents that collection skipped.
	Skipped []Skipped
	// SkippedTotal counts all skipped documents when Skipped lists only the
	// first of them; 0 means len(Skipped).
	SkippedTotal int
	// Unchanged counts the tickets not sent again because their summary is
	// current.
	Unchanged int

	Usage    ledger.Usage
	Fallback Fallback
}

// Item is one ticket in the job.
type Item struct {
	TicketID string
	Subject  string
	Customer string
	Outcome  Outcome
	// Summary is the model's answer, for OK.
	Summary string
	// Reason says why the ticket was not summarised, for the other outcomes.
	Reason string
}

// Skipped is a document that collection skipped, and why.
type Skipped struct {
	Blob string
	// Line is the 1-based line in a JSONL file, 0 for a whole file.
	Line     int
	TicketID string
	Reason   string
}

// Fallback is what the deadline fallback did for the job: the tickets
// it summarised synchronously (their usage and cost are in Usage), what
// they cost, and what that is above the batch price.
type Fallback struct {
	Items int
	Cost  catalog.Money
	Extra catalog.Money
}

// validate checks what the renderer relies on, before anything is written.
func (r *Report) validate() error {
	var errs []error
	for i, it := range r.Items {
		if !it.Outcome.valid() {
			errs = append(errs, fmt.Errorf("item %d (ticket %q): unknown outcome %q", i, it.TicketID, it.Outcome))
			if len(errs) == 10 {
				break
			}
		}
	}
	if r.SkippedTotal != 0 && r.SkippedTotal < len(r.Skipped) {
		errs = append(errs, fmt.Errorf("SkippedTotal %d is below the %d skipped listed", r.SkippedTotal, len(r.Skipped)))
	}
	if r.Usage.PromptTokens < 0 || r.Usage.CachedTokens < 0 || r.Usage.CompletionTokens < 0 || r.Usage.Cost < 0 {
		errs = append(errs, errors.New("negative usage"))
	}
	return errors.Join(errs...)
}

// counts are the numbers at the top of the report.
type counts struct {
	Tickets, Summarised, Refused, Failed, Expired, Cancelled int
	Skipped, SkippedListed, Unchanged                        int
	Tokens                                                   int64
}

// NotSummarised is failed, expired and cancelled together.
func (c counts) NotSummarised() int { return c.Failed + c.Expired + c.Cancelled }

// SkippedUnlisted is how many skipped documents the report does not list.
func (c counts) SkippedUnlisted() int { return c.Skipped - c.SkippedListed }

func (r *Report) counts() counts {
	c := counts{
		Tickets:       len(r.Items),
		Skipped:       max(r.SkippedTotal, len(r.Skipped)),
		SkippedListed: len(r.Skipped),
		Unchanged:     r.Unchanged,
		Tokens:        r.Usage.TotalTokens(),
	}
	for _, it := range r.Items {
		switch it.Outcome {
		case OK:
			c.Summarised++
		case Refused:
			c.Refused++
		case Failed:
			c.Failed++
		case Expired:
			c.Expired++
		case Cancelled:
			c.Cancelled++
		}
	}
	return c
}
