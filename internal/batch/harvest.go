package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/ledger"
)

// harvestParts harvests every part that has ended, under the job's lease.
func (s *Service) harvestParts(ctx context.Context, t *tick, j Job) (Job, error) {
	j, done, err := s.eachUnderLease(ctx, t, j, PartDone, "harvest part", s.harvest, func(j Job, i int, err error) Job {
		return s.noteHarvestError(ctx, j, i, t.owner, err)
	})
	t.count(func(r *TickReport) { r.Harvested += done })
	return j, err
}

// eachUnderLease runs step on each part of the job in status st, under
// the job's lease (claimed first, released after; step is told which
// part is the last, whose write may drop the lease itself), and returns
// how many succeeded. A part's failure (wrapped with what and the part) does not
// stop the others, unless the lease was lost; failed, if set, is told of
// it and returns the job as it then stands.
func (s *Service) eachUnderLease(ctx context.Context, t *tick, j Job, st PartStatus, what string,
	step func(ctx context.Context, j Job, i int, owner string, last bool) (Job, error), failed func(j Job, i int, err error) Job) (Job, int, error) {
	var todo []int
	for i := range j.Parts {
		if j.Parts[i].Status == st {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return j, 0, nil
	}
	j, err := s.claim(ctx, j, t.owner)
	if err != nil {
		return j, 0, err
	}
	var errs []error
	done := 0
	for k, i := range todo {
		var err error
		if j, err = step(ctx, j, i, t.owner, k == len(todo)-1); err != nil {
			errs = append(errs, fmt.Errorf("%s %d: %w", what, i, err))
			if errors.Is(err, errLeaseLost) {
				return j, done, errors.Join(errs...)
			}
			if failed != nil {
				j = failed(j, i, err)
			}
			continue
		}
		done++
	}
	j, err = s.release(ctx, j, t.owner)
	return j, done, errors.Join(append(errs, err)...)
}

// noteHarvestError counts a failed harvest and alerts when it keeps
// failing.
func (s *Service) noteHarvestError(ctx context.Context, j Job, i int, owner string, cause error) Job {
	alertNow := false
	stored, err := s.update(ctx, j, s.holding(owner, func(j *Job) error {
		alertNow = false
		j.Parts[i].HarvestErrors++
		if j.Parts[i].HarvestErrors >= 3 && s.due(j, AlertHarvestFailing) {
			alertNow = true
		}
		return nil
	}))
	if err != nil {
		return j
	}
	if alertNow {
		s.raise(ctx, &stored, AlertHarvestFailing, "the harvest of a finished batch keeps failing",
			map[string]any{"part": i, "attempts": stored.Parts[i].HarvestErrors, "error": cause.Error()})
	}
	return stored
}

// harvest takes one ended part through copy and parse (one pass: Azure's
// files are copied, hashed and parsed into the per-item results as they are
// read) → record the copies → ledger → delete at Azure → mark harvested.
// Each step may be repeated after a crash: a pass that did not finish
// committed nothing and is done again; once the copies are recorded, the
// results file is rewritten from them with the same content, never from
// Azure; and the ledger row has a key derived from the job and part, so it
// is rewritten, never added twice. release drops owner's lease in the
// write that marks the part harvested.
func (s *Service) harvest(ctx context.Context, j Job, i int, owner string, release bool) (Job, error) {
	if j.Pack != nil {
		return s.harvestPack(ctx, j, i, owner)
	}
	log := zerolog.Ctx(ctx).With().Int("part", i).Logger()
	p := j.Parts[i]
	var sum partSum
	var err error
	if !p.Copied {
		// One pass over Azure's files: copied, hashed and parsed as the
		// bytes go by. The copies and the results file are committed only
		// when every file was read whole, and recorded (Copied) before the
		// ledger is written: a crash before that record leaves nothing
		// booked, and the next harvest does the pass again.
		var copies []FileCopy
		if sum, copies, err = s.parse(ctx, &j, &p, s.azureFiles(ctx, &j, &p)); err != nil {
			return j, err
		}
		lost := p.OutputLost
		j, err = s.update(ctx, j, s.holding(owner, func(j *Job) error {
			q := &j.Parts[i]
			if q.Copied || q.Status != PartDone {
				return errSkip
			}
			q.Copied, q.Copies, q.OutputLost = true, copies, lost
			return nil
		}))
		if err != nil {
			return j, err
		}
		if lost && j.Parts[i].OutputLost {
			s.raise(ctx, &j, AlertOutputLost, "Azure deleted a finished batch's output before offpath copied it: its usage cannot be attributed",
				map[string]any{"part": i, "batch_id": p.BatchID, "azure_completed": p.RequestCounts.Completed, "azure_failed": p.RequestCounts.Failed})
		}
		p = j.Parts[i]
	} else if p.Status == PartDone {
		// The copies were recorded by a harvest that stopped before the
		// end: the results again from the copies, never from Azure.
		if sum, _, err = s.parse(ctx, &j, &p, s.copiedFiles(ctx, &p)); err != nil {
			return j, err
		}
	}
	if p.Status != PartDone {
		return j, nil // harvested meanwhile
	}
	// Azure's files are deleted while the ledger is written: both come
	// after the copies are recorded, and neither needs the other (a
	// harvest that stops here finishes from the copies).
	var leftover []string
	var deleted sync.WaitGroup
	deleted.Go(func() { leftover = s.deleteAzureFiles(ctx, &p, log) })
	if sum.usage.Requests > 0 || sum.usage.PromptTokens > 0 || sum.usage.CompletionTokens > 0 {
		if err := s.record(ctx, &j, &p, sum.usage); err != nil {
			deleted.Wait()
			return j, err
		}
	}
	deleted.Wait()
	mismatch := reconcile(&p, &sum)
	mark := s.holding(owner, func(j *Job) error {
		q := &j.Parts[i]
		if q.Status != PartDone {
			return errSkip
		}
		now := s.now()
		q.Status, q.HarvestedAt = harvestedStatus(q), now
		q.Counts, q.Usage, q.Mismatch, q.ResultsBlob = sum.counts, sum.usage, mismatch, resultsBlob(j, q)
		for _, id := range leftover {
			if !slices.Contains(j.Cleanup, id) {
				j.Cleanup = append(j.Cleanup, id)
			}
		}
		if allHarvested(j) {
			j.HarvestedAt = now
		}
		return nil
	})
	j, err = s.update(ctx, j, func(j *Job) error {
		if err := mark(j); err != nil {
			return err
		}
		if release {
			j.Lease = Lease{}
		}
		return nil
	})
	if err != nil {
		return j, err
	}
	log.Info().Int64("ok", sum.counts.OK).Int64("refused", sum.counts.Refused).Int64("failed", sum.counts.Failed).
		Int64("expired", sum.counts.Expired).Int64("cancelled", sum.counts.Cancelled).
		Int64("prompt_tokens", sum.usage.PromptTokens).Int64("completion_tokens", sum.usage.CompletionTokens).
		Msg("batch part harvested")
	if mismatch != "" {
		s.raise(ctx, &j, AlertCountsMismatch, "harvested lines disagree with Azure's request_counts",
			map[string]any{"part": i, "detail": mismatch})
	}
	return j, nil
}

// deleteAzureFiles deletes a part's files at Azure, all at once, and
// returns those it could not delete (retried by cleanup). A pack's files
// are the pack's to delete.
func (s *Service) deleteAzureFiles(ctx context.Context, p *Part, log zerolog.Logger) []string {
	if p.Pack != "" {
		return nil
	}
	ids := []string{p.OutputFileID, p.ErrorFileID, p.InputFileID}
	failed := make([]bool, len(ids))
	var wg sync.WaitGroup
	for k, id := range ids {
		if id == "" {
			continue
		}
		wg.Go(func() {
			if err := s.o.Azure.DeleteFile(ctx, id); err != nil && !errors.Is(err, ErrAzureNotFound) {
				log.Warn().Err(err).Str("file_id", id).Msg("Azure file not deleted; retried later")
				failed[k] = true
			}
		})
	}
	wg.Wait()
	var leftover []string
	for k, id := range ids {
		if failed[k] {
			leftover = append(leftover, id)
		}
	}
	return leftover
}

func allHarvested(j *Job) bool {
	for i := range j.Parts {
		if j.Parts[i].Status != PartHarvested {
			return false
		}
	}
	return true
}

func resultsBlob(j *Job, p *Part) string { return partBlob(j, p.Index, "results.jsonl.gz") }

// record writes the part's usage to the ledger under a key derived from
// the job and the part.
func (s *Service) record(ctx context.Context, j *Job, p *Part, u ledger.Usage) error {
	e := ledger.Entry{Tenant: j.Tenant, Month: j.Month(), Path: ledger.Batch, Unit: LedgerUnit(j.ID, p.Index),
		Alias: j.Alias, Deployment: p.Deployment, Usage: u}
	if err := e.Estimate(s.o.Catalog); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("no price for the batch usage; recorded without a cost")
	}
	if err := s.o.Ledger.Record(ctx, e); err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	return nil
}

// LedgerUnit is the ledger unit of a job's part: the same on every harvest.
func LedgerUnit(jobID string, part int) string {
	return "batch:" + jobID + "/part-" + strconv.Itoa(part)
}
