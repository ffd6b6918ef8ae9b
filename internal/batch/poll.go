package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// maxErrorsKept bounds the validation errors kept per part.
const maxErrorsKept = 5

// staleAfter is how many poll intervals an unchanged part's stored poll
// time may lag before it is written anyway.
const staleAfter = 5

// material reports whether a poll changed what a part is, beyond when it
// was polled.
func material(a, b *Part) bool {
	return a.Status != b.Status || a.AzureStatus != b.AzureStatus || a.RequestCounts != b.RequestCounts ||
		a.OutputFileID != b.OutputFileID || a.ErrorFileID != b.ErrorFileID || a.BatchID != b.BatchID ||
		len(a.Errors) != len(b.Errors) || !a.AzureExpiry.Equal(b.AzureExpiry)
}

// polled is one part's fresh state from Azure.
type polled struct {
	part  int
	batch AzureBatch
	err   error
}

// pollParts asks Azure about every submitted part that is due (unless
// the tick's read of the batch list showed it), and applies the answers in
// one conditional write.
func (s *Service) pollParts(ctx context.Context, t *tick, j Job) (Job, error) {
	now := s.now()
	var due []int
	for i := range j.Parts {
		if s.pollDue(&j, &j.Parts[i], now) {
			due = append(due, i)
		}
	}
	if len(due) == 0 {
		return j, nil
	}
	answers := make([]polled, len(due))
	var wg sync.WaitGroup
	for k, i := range due {
		if b, ok := t.listed[j.Parts[i].BatchID]; ok {
			answers[k] = polled{part: i, batch: b}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := s.o.Azure.GetBatch(ctx, j.Parts[i].BatchID)
			answers[k] = polled{part: i, batch: b, err: err}
		}()
	}
	wg.Wait()
	t.count(func(r *TickReport) { r.Polled += len(due) })

	var errs []error
	var events []partEvent
	j, err := s.update(ctx, j, func(j *Job) error {
		events = events[:0]
		changed := false
		for _, a := range answers {
			p := &j.Parts[a.part]
			if p.Status != PartSubmitted || p.BatchID != a.batch.ID && a.err == nil {
				continue // moved on meanwhile
			}
			if a.err != nil {
				if errors.Is(a.err, ErrAzureNotFound) {
					// The batch is gone (deleted outside offpath): nothing to harvest.
					p.AzureStatus, p.Status, p.FinishedAt = AzureFailed, PartDone, s.now()
					p.Errors = []BatchError{{Code: "batch_not_found", Message: "the Azure batch no longer exists"}}
					events = append(events, partEvent{p.Index, AlertFailed})
					changed = true
				}
				continue
			}
			before := *p
			if ev := s.applyBatch(p, a.batch); ev != "" {
				events = append(events, partEvent{p.Index, ev})
			}
			// Nothing new is not worth a write, unless the stored poll time
			// is getting stale (it is what the status shows). A stretched
			// poll (cadence.go) of a batch running as expected brings new
			// counts, so it is written and its poll time schedules the
			// next; one that brings nothing new leaves the part due at
			// every tick until something changes or the stale write.
			if material(&before, p) || p.PolledAt.Sub(before.PolledAt) > staleAfter*max(s.o.PollInterval, time.Second) {
				changed = true
			}
		}
		if !changed {
			return errSkip
		}
		// A part that ended is harvested next in this tick, under the
		// job's lease: taken in this write rather than one of its own.
		if ended(j, answers) && !j.leasedByOther(t.owner, s.now()) {
			j.Lease = Lease{Owner: t.owner, Until: s.now().Add(s.o.LeaseTTL)}
		}
		return nil
	})
	for _, a := range answers {
		if a.err != nil && !errors.Is(a.err, ErrAzureNotFound) {
			if errors.Is(a.err, ErrAzureAuth) {
				s.authAlert(ctx, t, a.err)
			}
			errs = append(errs, fmt.Errorf("poll part %d: %w", a.part, a.err))
		}
	}
	if err != nil {
		return j, errors.Join(append(errs, err)...)
	}
	s.announce(ctx, &j, events)
	return j, errors.Join(errs...)
}

// ended reports whether a part the answers are about is now done.
func ended(j *Job, answers []polled) bool {
	for _, a := range answers {
		if j.Parts[a.part].Status == PartDone {
			return true
		}
	}
	return false
}

// partEvent is an alert-worthy transition of a part.
type partEvent struct {
	part  int
	alert string
}

// announce raises the alerts of transitions that were stored.
func (s *Service) announce(ctx context.Context, j *Job, events []partEvent) {
	for _, ev := range events {
		p := &j.Parts[ev.part]
		f := map[string]any{"part": p.Index, "batch_id": p.BatchID, "deployment": p.Deployment,
			"completed": p.RequestCounts.Completed, "failed": p.RequestCounts.Failed, "total": p.RequestCounts.Total}
		switch ev.alert {
		case AlertFailed:
			code := ""
			if len(p.Errors) > 0 {
				code = p.Errors[0].Code
			}
			f["code"] = code
			s.raise(ctx, j, AlertFailed, "batch job part failed: "+code, f)
		case AlertExpired:
			s.raise(ctx, j, AlertExpired, "batch job part expired before all its requests ran; partial output is harvested", f)
		case "requeued":
			s.coolOff(ctx, p.Deployment, "token_limit_exceeded")
			zerolog.Ctx(ctx).Warn().Int("part", p.Index).Int("attempt", p.Attempt).Time("next_attempt_at", p.NextAttemptAt).
				Msg("Azure failed the batch with token_limit_exceeded during validation; part held for resubmission")
		}
	}
}

// applyBatch records Azure's view of a part's batch and returns the alert
// the change calls for, if any.
func (s *Service) applyBatch(p *Part, b AzureBatch) string {
	now := s.now()
	p.PolledAt = now
	p.AzureStatus, p.RequestCounts = b.Status, b.RequestCounts
	p.OutputFileID, p.ErrorFileID = b.OutputFileID, b.ErrorFileID
	if !b.ExpiresAt.IsZero() {
		p.AzureExpiry = b.ExpiresAt
	}
	p.Errors = append(p.Errors[:0], b.Errors[:min(len(b.Errors), maxErrorsKept)]...)
	if b.Status == AzureFailed && errors.Is(b.Err(), ErrQuotaFull) {
		// Validation-time quota refusal: the same input file is resubmitted
		// later under a new attempt.
		s.requeue(p, "token_limit_exceeded")
		return "requeued"
	}
	if !b.FilesReady() {
		return "" // running, or completed without its file ids yet: not final
	}
	p.Status, p.FinishedAt = PartDone, now
	p.OutputExpiresAt = now.Add(s.o.OutputExpiry)
	switch b.Status {
	case AzureFailed:
		return AlertFailed
	case AzureExpired:
		return AlertExpired
	}
	return ""
}

// requeue puts a part refused by Azure's quota back to pending, with
// backoff.
func (s *Service) requeue(p *Part, reason string) {
	now := s.now()
	if p.BatchID != "" {
		p.PreviousBatchIDs = append(p.PreviousBatchIDs, p.BatchID)
	}
	p.BatchID, p.AzureStatus, p.Errors = "", "", nil
	p.RequestCounts = RequestCounts{}
	p.Status, p.HeldReason = PartPending, reason
	if p.HeldSince.IsZero() {
		p.HeldSince = now
	}
	p.Attempt++
	p.Refusals++
	p.MaybeCreated = false
	p.NextAttemptAt = now.Add(s.backoff(p.Refusals))
}

// cancelParts carries out a requested cancellation: parts not yet
// submitted end at once; submitted ones are cancelled at Azure (their
// partial output is harvested when they end).
func (s *Service) cancelParts(ctx context.Context, j Job) (Job, error) {
	if !j.CancelRequested {
		return j, nil
	}
	var toCancel []int
	for i := range j.Parts {
		p := &j.Parts[i]
		if p.Status == PartSubmitted && !p.CancelSent && !p.azureTerminal() {
			toCancel = append(toCancel, i)
		}
	}
	var errs []error
	sent := map[int]bool{}
	for _, i := range toCancel {
		_, err := s.o.Azure.CancelBatch(ctx, j.Parts[i].BatchID)
		if err != nil && !errors.Is(err, ErrAzureConflict) {
			errs = append(errs, fmt.Errorf("cancel part %d: %w", i, err))
			continue
		}
		sent[i] = true // or it was already finishing: harvested as it ends
	}
	j, err := s.update(ctx, j, func(j *Job) error {
		changed := endPending(j, s.now())
		for i := range sent {
			if p := &j.Parts[i]; p.Status == PartSubmitted && !p.CancelSent {
				p.CancelSent, changed = true, true
			}
		}
		if !changed {
			return errSkip
		}
		return nil
	})
	return j, errors.Join(append(errs, err)...)
}

// endPending ends every pending part of a job whose cancellation was
// requested. It reports whether anything changed.
func endPending(j *Job, now time.Time) bool {
	changed := false
	for i := range j.Parts {
		// A packed part ends with its pack (see leavePack).
		if p := &j.Parts[i]; p.Status == PartPending && p.Pack == "" {
			p.Status, p.AzureStatus, p.FinishedAt = PartDone, AzureCancelled, now
			changed = true
		}
	}
	return changed
}

// cleanup deletes the Azure files, and the results blobs, left after a
// harvest. What could not be deleted stays listed, and the job active, so
// the next tick tries again.
func (s *Service) cleanup(ctx context.Context, j Job) (Job, error) {
	if len(j.Cleanup) == 0 && len(j.CleanupBlobs) == 0 {
		return j, nil
	}
	var files, blobs []string
	var errs []error
	for _, id := range j.Cleanup {
		if err := s.o.Azure.DeleteFile(ctx, id); err != nil && !errors.Is(err, ErrAzureNotFound) {
			errs = append(errs, err)
			continue
		}
		files = append(files, id)
	}
	for _, prefix := range j.CleanupBlobs {
		if err := s.o.Blobs.DeletePrefix(ctx, s.o.Containers.Results, prefix); err != nil {
			errs = append(errs, fmt.Errorf("delete blobs %s: %w", prefix, err))
			continue
		}
		blobs = append(blobs, prefix)
	}
	if len(files) == 0 && len(blobs) == 0 {
		return j, errors.Join(errs...)
	}
	j, err := s.update(ctx, j, func(j *Job) error {
		j.Cleanup = slices.DeleteFunc(j.Cleanup, func(id string) bool { return slices.Contains(files, id) })
		j.CleanupBlobs = slices.DeleteFunc(j.CleanupBlobs, func(p string) bool { return slices.Contains(blobs, p) })
		return nil
	})
	return j, errors.Join(append(errs, err)...)
}
