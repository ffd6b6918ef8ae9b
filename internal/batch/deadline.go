package batch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
)

// Bounds of a job's CompleteBy, from its submission.
const (
	MinCompleteBy = time.Hour
	MaxCompleteBy = 7 * 24 * time.Hour
)

// Defaults of the deadline settings (Options).
const (
	DefaultCancelAllowance     = 15 * time.Minute
	DefaultStartAllowance      = 30 * time.Minute
	DefaultSlowAfter           = 10 * time.Minute
	DefaultFallbackRate        = 60
	DefaultFallbackConcurrency = 4
	DefaultFallbackSlice       = 2 * time.Minute
)

// Reasons a part falls back (Fallback.Reason).
const (
	RiskHeld       = "held"        // still waiting for quota
	RiskValidating = "validating"  // Azure has not started it
	RiskNoProgress = "no_progress" // running, no line done yet
	RiskSlow       = "slow"        // its pace would finish too late
	RiskLate       = "late"        // the last moment to fall back has come
)

// Fallback is a part's run through the synchronous deployment.
type Fallback struct {
	Reason string `json:"reason"`
	// Detail says in words what the rule saw.
	Detail    string    `json:"detail"`
	StartedAt time.Time `json:"started_at"`
	// Deployment is the alias's queue deployment the items run on.
	Deployment string `json:"deployment"`
	// Items are the part's items its batch did not answer (set when the
	// batch's output has been harvested); Done of them have an answer
	// and a ledger row.
	Items int `json:"items"`
	Done  int `json:"done"`
	// FromBatch are the part's items its batch answered.
	FromBatch int64 `json:"from_batch"`
	// Counts and Usage are the fallback's own (billed at the synchronous
	// price).
	Counts     Counts       `json:"counts"`
	Usage      ledger.Usage `json:"usage"`
	FinishedAt time.Time    `json:"finished_at,omitzero"`
}

// FallbackCounter, if Options.Decisions is one, counts the fallbacks
// started, by alias and reason (package tokenmetrics' Prometheus).
type FallbackCounter interface {
	Fallback(alias, reason string)
}

// setDeadlineDefaults fills the deadline settings.
func (o *Options) setDeadlineDefaults() {
	if o.CancelAllowance <= 0 {
		o.CancelAllowance = DefaultCancelAllowance
	}
	if o.StartAllowance <= 0 {
		o.StartAllowance = DefaultStartAllowance
	}
	if o.SlowAfter <= 0 {
		o.SlowAfter = DefaultSlowAfter
	}
	if o.FallbackRate <= 0 {
		o.FallbackRate = DefaultFallbackRate
	}
	if o.FallbackConcurrency <= 0 {
		o.FallbackConcurrency = DefaultFallbackConcurrency
	}
	if o.FallbackSlice <= 0 {
		o.FallbackSlice = DefaultFallbackSlice
	}
}

// checkCompleteBy accepts a deadline at least MinCompleteBy and at most
// MaxCompleteBy after now, for an alias with a queue deployment to fall
// back to.
func (s *Service) checkCompleteBy(by time.Time, a *catalog.Alias) error {
	if by.IsZero() {
		return nil
	}
	now := s.now()
	switch {
	case by.Before(now.Add(MinCompleteBy)):
		return invalid("invalid_complete_by", "complete_by: must be at least %v after submission", MinCompleteBy)
	case by.After(now.Add(MaxCompleteBy)):
		return invalid("invalid_complete_by", "complete_by: must be at most %v after submission", MaxCompleteBy)
	case a.Queue == nil:
		return invalid("no_fallback_deployment", "complete_by: alias %q has no synchronous deployment to fall back to", a.Name)
	}
	return nil
}

// margin is the time a part's fallback needs before the deadline: the
// cancellation at Azure and the harvest (CancelAllowance), then its lines
// at FallbackRate a minute.
func (s *Service) margin(p *Part) time.Duration {
	perLine := time.Minute / time.Duration(s.o.FallbackRate)
	return s.o.CancelAllowance + time.Duration(p.Lines)*perLine
}

// risk applies the progress rule to a part of a job due at due: it
// returns the reason the part can no longer finish in time ("" if it
// can), and what was seen. With M the part's margin, a part not yet ended
// is at risk when
//
//   - it is held, validating, or running without a line done, at
//     due − M − StartAllowance (a batch needs time to run once started);
//   - it is running with lines done, SlowAfter after its submission, and
//     its pace so far (lines done since submission) would finish it after
//     due − M;
//   - in any case at due − M.
func (s *Service) risk(p *Part, due, now time.Time) (string, string) {
	if p.Fallback != nil || p.Status == PartDone || p.Status == PartHarvested || p.Status == PartFallback {
		return "", ""
	}
	last := due.Add(-s.margin(p))
	lastStart := last.Add(-s.o.StartAllowance)
	done := p.RequestCounts.Completed + p.RequestCounts.Failed
	switch {
	case p.Status == PartPending:
		if !now.Before(lastStart) {
			return RiskHeld, fmt.Sprintf("still held (%s) %v before complete_by", p.HeldReason, due.Sub(now).Round(time.Second))
		}
		return "", ""
	case p.AzureStatus == "" || p.AzureStatus == AzureValidating:
		if !now.Before(lastStart) {
			return RiskValidating, fmt.Sprintf("still validating at Azure %v before complete_by", due.Sub(now).Round(time.Second))
		}
		return "", ""
	case p.azureTerminal() || p.AzureStatus == AzureCancelling:
		return "", "" // ended, or ending: harvested as it is
	case !now.Before(last):
		return RiskLate, fmt.Sprintf("%d of %d lines done %v before complete_by", done, p.Lines, due.Sub(now).Round(time.Second))
	case done == 0:
		if !now.Before(lastStart) {
			return RiskNoProgress, fmt.Sprintf("running at Azure with no line done %v before complete_by", due.Sub(now).Round(time.Second))
		}
		return "", ""
	}
	ran := now.Sub(p.SubmittedAt)
	if p.SubmittedAt.IsZero() || ran < s.o.SlowAfter {
		return "", ""
	}
	total := max(p.RequestCounts.Total, int64(p.Lines))
	finish := now.Add(time.Duration(float64(ran) * float64(total-done) / float64(done)))
	if finish.After(last) {
		return RiskSlow, fmt.Sprintf("%d of %d lines done in %v: at that pace done at %s, after the last moment to fall back (%s)",
			done, total, ran.Round(time.Second), finish.Format(time.RFC3339), last.Format(time.RFC3339))
	}
	return "", ""
}

// deadlines starts the fallback of every part of the job that can no
// longer finish by its CompleteBy: a submitted part is cancelled at Azure
// (what it did is harvested as it ends), a held one ends at once; the
// rest of their items then run synchronously (fallback.go).
func (s *Service) deadlines(ctx context.Context, j Job) (Job, error) {
	if j.CompleteBy.IsZero() || s.o.Sync == nil || j.CancelRequested {
		return j, nil
	}
	a, ok := s.o.Catalog.Alias(j.Alias)
	if !ok || a.Queue == nil {
		return j, nil
	}
	now := s.now()
	type hit struct {
		part           int
		reason, detail string
	}
	var hits []hit
	for i := range j.Parts {
		if r, d := s.risk(&j.Parts[i], j.CompleteBy, now); r != "" {
			hits = append(hits, hit{i, r, d})
		}
	}
	if len(hits) == 0 {
		return j, nil
	}
	var errs []error
	sent := map[int]bool{}
	for _, h := range hits {
		p := &j.Parts[h.part]
		if p.Status != PartSubmitted || p.CancelSent {
			continue
		}
		_, err := s.o.Azure.CancelBatch(ctx, p.BatchID)
		if err != nil && !errors.Is(err, ErrAzureConflict) {
			errs = append(errs, fmt.Errorf("cancel part %d for its deadline: %w", h.part, err))
			continue // tried again on the next tick
		}
		sent[h.part] = true
	}
	var started []int
	j, err := s.update(ctx, j, func(j *Job) error {
		started = started[:0]
		now := s.now()
		for _, h := range hits {
			p := &j.Parts[h.part]
			if p.Fallback != nil {
				continue
			}
			switch {
			case p.Status == PartPending:
				p.Status, p.AzureStatus, p.FinishedAt = PartDone, AzureCancelled, now
			case p.Status == PartSubmitted && sent[h.part]:
				p.CancelSent = true
			case p.Status == PartSubmitted && p.CancelSent:
			default:
				continue
			}
			p.Fallback = &Fallback{Reason: h.reason, Detail: h.detail, StartedAt: now, Deployment: a.Queue.Name}
			started = append(started, h.part)
		}
		if len(started) == 0 {
			return errSkip
		}
		return nil
	})
	if err != nil {
		return j, errors.Join(append(errs, err)...)
	}
	for _, i := range started {
		p := &j.Parts[i]
		s.raise(ctx, &j, AlertDeadlineFallback, "a part cannot finish by the job's complete_by: cancelled at Azure, its remaining items run synchronously",
			map[string]any{"part": i, "reason": p.Fallback.Reason, "detail": p.Fallback.Detail, "complete_by": j.CompleteBy,
				"deployment": p.Fallback.Deployment, "batch_id": p.BatchID})
		if c, ok := s.o.Decisions.(FallbackCounter); ok {
			c.Fallback(j.Alias, p.Fallback.Reason)
		}
	}
	s.tell(ctx, j, "fallback")
	return j, errors.Join(errs...)
}

// harvestedStatus is what a part becomes when its batch's output is
// harvested: harvested, or, if it falls back, fallback until the
// synchronous run has answered the rest.
func harvestedStatus(p *Part) PartStatus {
	if p.Fallback != nil && p.Fallback.FinishedAt.IsZero() {
		return PartFallback
	}
	return PartHarvested
}
