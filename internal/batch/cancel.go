package batch

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"
)

// ErrFinished: the job has ended; there is nothing to cancel.
var ErrFinished = errors.New("job already finished")

// Cancel stops a tenant's job: parts not yet submitted end at once (their
// items are cancelled); submitted parts are cancelled at Azure, which ends
// them with partial output, harvested and billed like any other. Cancelling
// a job already being cancelled is harmless; a finished job is ErrFinished.
// An Azure call that fails here is retried by the poll tick.
func (s *Service) Cancel(ctx context.Context, tenantID, id string) (Job, error) {
	j, err := s.read(ctx, tenantID, id)
	if err != nil {
		return Job{}, err
	}
	switch j.State {
	case Completed, Failed, Expired, Harvested:
		return j, fmt.Errorf("job %s is %s: %w", j.ID, j.State, ErrFinished)
	case Cancelled:
		return j, nil
	}
	left, err := s.leavePacks(ctx, &j)
	if err != nil {
		return j, err
	}
	j, err = s.update(ctx, j, func(j *Job) error {
		if j.CancelRequested {
			return errSkip
		}
		switch j.State {
		case Completed, Failed, Expired, Harvested:
			return fmt.Errorf("job %s is %s: %w", j.ID, j.State, ErrFinished)
		}
		j.CancelRequested, j.CancelRequestedAt = true, s.now()
		for i, packID := range left {
			if p := &j.Parts[i]; p.Pack == packID && p.Status == PartPending {
				p.Pack = "" // out of its pack: ends now, like any pending part
			}
		}
		endPending(j, s.now())
		return nil
	})
	if err != nil {
		return j, err
	}
	log := zerolog.Ctx(ctx)
	var sent []int
	for i := range j.Parts {
		p := &j.Parts[i]
		if p.Status != PartSubmitted || p.CancelSent || p.azureTerminal() {
			continue
		}
		if _, err := s.o.Azure.CancelBatch(ctx, p.BatchID); err != nil && !errors.Is(err, ErrAzureConflict) {
			log.Warn().Err(err).Str("job", j.ID).Int("part", i).Msg("cancel at Azure failed; the poller retries")
			continue
		}
		sent = append(sent, i)
	}
	if len(sent) > 0 {
		stored, err := s.update(ctx, j, func(j *Job) error {
			for _, i := range sent {
				j.Parts[i].CancelSent = true
			}
			return nil
		})
		if err == nil {
			j = stored
		}
	}
	log.Info().Str("job", j.ID).Str("state", string(j.State)).Int("azure_cancels", len(sent)).Msg("batch job cancellation requested")
	return s.packView(ctx, j, map[string]*Job{}), nil
}
