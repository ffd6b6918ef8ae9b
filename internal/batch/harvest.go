package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batchapi"
	"github.com/offpath/offpath/internal/ledger"
)

// harvestParts harvests every part that has ended, under the job's lease.
func (s *Service) harvestParts(ctx context.Context, t *tick, j Job) (Job, error) {
	var todo []int
	for i := range j.Parts {
		if j.Parts[i].Status == PartDone {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return j, nil
	}
	j, err := s.claim(ctx, j, t.owner)
	if err != nil {
		return j, err
	}
	var errs []error
	for _, i := range todo {
		var err error
		if j, err = s.harvest(ctx, j, i, t.owner); err != nil {
			errs = append(errs, fmt.Errorf("harvest part %d: %w", i, err))
			if errors.Is(err, errLeaseLost) {
				return j, errors.Join(errs...)
			}
			j = s.noteHarvestError(ctx, j, i, t.owner, err)
			continue
		}
		t.count(func(r *TickReport) { r.Harvested++ })
	}
	j, err = s.release(ctx, j, t.owner)
	return j, errors.Join(append(errs, err)...)
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

// harvest takes one ended part through copy → parse → results → ledger →
// delete at Azure → mark harvested. Each step may be repeated after a
// crash: the copy is skipped once recorded, the results file is rewritten
// from the copies with the same content, and the ledger row has a key
// derived from the job and part, so it is rewritten, never added twice.
func (s *Service) harvest(ctx context.Context, j Job, i int, owner string) (Job, error) {
	log := zerolog.Ctx(ctx).With().Int("part", i).Logger()
	p := j.Parts[i]
	if !p.Copied {
		copies, lost, err := s.copyFiles(ctx, &j, &p)
		if err != nil {
			return j, err
		}
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
	}
	if p.Status != PartDone {
		return j, nil // harvested meanwhile
	}

	sum, err := s.parse(ctx, &j, &p)
	if err != nil {
		return j, err
	}
	if sum.usage.Requests > 0 || sum.usage.PromptTokens > 0 || sum.usage.CompletionTokens > 0 {
		if err := s.record(ctx, &j, &p, sum.usage); err != nil {
			return j, err
		}
	}
	var leftover []string
	for _, id := range []string{p.OutputFileID, p.ErrorFileID, p.InputFileID} {
		if id == "" {
			continue
		}
		if err := s.o.Azure.DeleteFile(ctx, id); err != nil && !errors.Is(err, batchapi.ErrNotFound) {
			log.Warn().Err(err).Str("file_id", id).Msg("Azure file not deleted; retried later")
			leftover = append(leftover, id)
		}
	}
	mismatch := reconcile(&p, &sum)
	j, err = s.update(ctx, j, s.holding(owner, func(j *Job) error {
		q := &j.Parts[i]
		if q.Status != PartDone {
			return errSkip
		}
		now := s.now()
		q.Status, q.HarvestedAt = PartHarvested, now
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
	}))
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

func allHarvested(j *Job) bool {
	for i := range j.Parts {
		if j.Parts[i].Status != PartHarvested {
			return false
		}
	}
	return true
}

func resultsBlob(j *Job, p *Part) string { return partBlob(j, p.Index, "results.jsonl") }

// copyFiles copies a part's output and error files from Azure into the
// results container, computing each copy's SHA-256 on the way. lost is
// true when Azure no longer has a file.
func (s *Service) copyFiles(ctx context.Context, j *Job, p *Part) (copies []FileCopy, lost bool, err error) {
	for _, f := range []struct{ id, kind string }{{p.OutputFileID, "output"}, {p.ErrorFileID, "errors"}} {
		if f.id == "" {
			continue
		}
		name := partBlob(j, p.Index, p.BatchID+"."+f.kind+".jsonl")
		c, err := s.copyFile(ctx, f.id, name)
		if errors.Is(err, batchapi.ErrNotFound) {
			lost = true
			continue
		}
		if err != nil {
			return nil, false, err
		}
		copies = append(copies, c)
	}
	return copies, lost, nil
}

func (s *Service) copyFile(ctx context.Context, fileID, name string) (FileCopy, error) {
	body, err := s.o.Azure.OpenFileContent(ctx, fileID)
	if err != nil {
		return FileCopy{}, err
	}
	defer body.Close()
	w, err := s.o.Blobs.Create(ctx, s.o.Containers.Results, name, map[string]string{"azure_file_id": fileID})
	if err != nil {
		return FileCopy{}, err
	}
	if _, err := io.Copy(w, body); err != nil {
		w.Abort(err)
		return FileCopy{}, fmt.Errorf("copy Azure file %s: %w", fileID, err)
	}
	if err := w.Close(); err != nil {
		return FileCopy{}, err
	}
	return FileCopy{AzureFileID: fileID, Blob: name, Bytes: w.Size(), SHA256: w.SHA256()}, nil
}

// record writes the part's usage to the ledger under a key derived from
// the job and the part.
func (s *Service) record(ctx context.Context, j *Job, p *Part, u Usage) error {
	e := ledger.Entry{Tenant: j.Tenant, Month: j.Month(), Path: ledger.Batch, Unit: LedgerUnit(j.ID, p.Index),
		Alias: j.Alias, Deployment: p.Deployment, Usage: ledger.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
			CachedTokens: u.CachedTokens, ReasoningTokens: u.ReasoningTokens, Requests: u.Requests, Refusals: u.Refusals}}
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
