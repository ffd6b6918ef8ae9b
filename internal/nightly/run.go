package nightly

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/batch"
)

// Metadata keys on the day's job, so that a run whose record was lost can
// find its files again.
const (
	metaDay = "nightly_day"
	metaRun = "nightly_run"
)

// Run collects the day's new and changed tickets and submits them as one
// job (see the package documentation). Running it again for a day that ran
// already does nothing but repair; two runs at once make one job. An error
// means nothing was submitted, or the submitted job is not yet recorded
// (the next run adopts it): run it again.
func (s *Service) Run(ctx context.Context, day time.Time) (Night, error) {
	n, err := s.run(ctx, day)
	if err != nil {
		// The deadline would say so hours later; the operator hears now.
		s.o.Alerts.Raise(ctx, alert.Alert{Name: AlertRunFailed, Tenant: s.o.Tenant, At: s.now(),
			Message: fmt.Sprintf("the nightly summaries of %s failed: %v", dayName(day), err),
			Fields:  map[string]any{"day": dayName(day)}})
	}
	return n, err
}

func (s *Service) run(ctx context.Context, day time.Time) (Night, error) {
	name := dayName(day)
	log := zerolog.Ctx(ctx).With().Str("day", name).Str("tenant", s.o.Tenant).Logger()
	ctx = log.WithContext(ctx)
	n, err := s.o.Nights.Get(ctx, s.o.Tenant, name)
	switch {
	case err == nil:
		log.Info().Str("job", n.JobID).Msg("nightly summaries: the day has run already")
		return s.repair(ctx, n)
	case !errors.Is(err, ErrNotFound):
		return Night{}, err
	}
	if j, err := s.o.Batches.JobByKey(ctx, s.o.Tenant, IdempotencyKey(name)); err == nil {
		log.Info().Str("job", j.ID).Msg("nightly summaries: the day's job exists; recording it")
		return s.adopt(ctx, j)
	} else if !errors.Is(err, batch.ErrNotFound) {
		return Night{}, err
	}

	t, err := s.o.Tenants.Get(ctx, s.o.Tenant)
	if err != nil {
		return Night{}, fmt.Errorf("support tenant %q: %w", s.o.Tenant, err)
	}
	var id [8]byte
	if _, err := io.ReadFull(s.o.Rand, id[:]); err != nil {
		return Night{}, fmt.Errorf("name the run: %w", err)
	}
	n = Night{Tenant: s.o.Tenant, Day: name, Run: hex.EncodeToString(id[:]), Created: s.now()}
	prefix := RunPrefix(s.o.Tenant, name, n.Run)
	discard := func() {
		if err := s.o.Blobs.DeletePrefix(context.WithoutCancel(ctx), s.o.Uploads, prefix); err != nil {
			log.Warn().Err(err).Msg("nightly summaries: a discarded run's files were not deleted")
		}
	}

	res, err := s.collect(ctx, day, n.Run)
	if err != nil {
		discard()
		return Night{}, err
	}
	n.Collected = res
	log.Info().Int("files", res.Files).Int("tickets", res.Tickets).Int("new", res.New).Int("unchanged", res.Unchanged).
		Int("skipped", res.SkippedTotal).Msg("nightly summaries: tickets collected")

	if res.New > 0 {
		job, replayed, err := s.o.Batches.Submit(ctx, t, batch.Request{Alias: s.o.Alias, SystemPrompt: s.o.SystemPrompt,
			MaxTokens: s.o.MaxTokens, InputBlob: prefix + corpusFile, IdempotencyKey: IdempotencyKey(name), CompleteBy: s.completeBy(),
			Metadata: map[string]string{metaDay: name, metaRun: n.Run}})
		if err != nil {
			discard()
			return Night{}, fmt.Errorf("submit the day's tickets: %w", err)
		}
		if replayed { // another run of the same day submitted first
			discard()
			return s.adopt(ctx, job)
		}
		n.JobID = job.ID
		log.Info().Str("job", job.ID).Int("items", job.Items).Msg("nightly summaries: job submitted")
	}
	// The job's parts hold the corpus now; the index and the manifest stay
	// for the report.
	if err := s.o.Blobs.Delete(ctx, s.o.Uploads, prefix+corpusFile); err != nil {
		log.Warn().Err(err).Msg("nightly summaries: the submitted corpus was not deleted")
	}
	run := n.Run
	n, err = s.create(ctx, n)
	if err != nil {
		return Night{}, err
	}
	if n.Run != run { // a racing run of a day without a job recorded it first
		discard()
	}
	return s.repair(ctx, n)
}

// create records n; if a racing run recorded the day first, its record
// stands, unless it made no job and n did.
func (s *Service) create(ctx context.Context, n Night) (Night, error) {
	stored, err := s.o.Nights.Create(ctx, n)
	if !errors.Is(err, ErrExists) {
		return stored, err
	}
	cur, err := s.o.Nights.Get(ctx, n.Tenant, n.Day)
	if err != nil {
		return Night{}, err
	}
	if cur.JobID != "" || n.JobID == "" {
		return cur, nil
	}
	n.ETag = cur.ETag
	return s.o.Nights.Update(ctx, n)
}

// adopt records a day from its job, whose metadata names the run.
func (s *Service) adopt(ctx context.Context, j batch.Job) (Night, error) {
	day, run := j.Metadata[metaDay], j.Metadata[metaRun]
	if day == "" || run == "" {
		return Night{}, fmt.Errorf("job %s has the day's key but no nightly metadata", j.ID)
	}
	n := Night{Tenant: s.o.Tenant, Day: day, Run: run, JobID: j.ID, Created: j.Created}
	if m, err := s.readManifest(ctx, n); err == nil {
		n.Collected = m.Collected
	} else {
		zerolog.Ctx(ctx).Warn().Err(err).Str("job", j.ID).Msg("nightly summaries: manifest of an adopted run unreadable")
	}
	n, err := s.create(ctx, n)
	if err != nil {
		return Night{}, err
	}
	return s.repair(ctx, n)
}

// repair finishes what a run may have left undone: the hashes of a
// submitted day, the report of a day without a job.
func (s *Service) repair(ctx context.Context, n Night) (Night, error) {
	switch {
	case n.JobID != "" && !n.HashesRecorded:
		if err := s.recordHashes(ctx, n); err != nil {
			return n, err
		}
		return s.update(ctx, n, func(n *Night) { n.HashesRecorded = true })
	case n.JobID == "" && !n.Reported():
		return s.writeReport(ctx, n, nil)
	}
	return n, nil
}

// update applies change to the stored record, re-reading on a conflict.
func (s *Service) update(ctx context.Context, n Night, change func(*Night)) (Night, error) {
	for attempt := 0; ; attempt++ {
		change(&n)
		stored, err := s.o.Nights.Update(ctx, n)
		if !errors.Is(err, ErrConflict) || attempt == 3 {
			return stored, err
		}
		if n, err = s.o.Nights.Get(ctx, n.Tenant, n.Day); err != nil {
			return Night{}, err
		}
	}
}

// completeBy is the day's job's deadline: ReportLead before the next
// report deadline, and at least the least complete_by the control plane
// accepts (a run that late makes a late report all the same, as soon as
// it can). Zero without a report deadline, or with one more than
// batch.MaxCompleteBy away.
func (s *Service) completeBy() time.Time {
	if s.o.ReportDeadline == nil {
		return time.Time{}
	}
	now := s.now()
	d := s.o.ReportDeadline(now)
	if d.IsZero() || d.After(now.Add(batch.MaxCompleteBy)) {
		return time.Time{} // no deadline, or none that a night can mean
	}
	return later(d.Add(-s.o.ReportLead), now.Add(batch.MinCompleteBy+time.Minute))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
