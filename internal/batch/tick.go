package batch

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// TickReport says what one poll tick did.
type TickReport struct {
	Jobs      int           `json:"jobs"`
	Polled    int           `json:"polled"`
	Admitted  int           `json:"admitted"`
	Refused   int           `json:"refused"`
	Harvested int           `json:"harvested"`
	Failed    int           `json:"failed"`
	Duration  time.Duration `json:"duration"`
}

// tick is the state of one poll tick.
type tick struct {
	owner string
	mu    sync.Mutex
	rep   TickReport
	auth  sync.Once // azure_auth is raised once per tick, not per job
	// listed are the due batches' states read from Azure's batch list at
	// the start of the tick; read-only after.
	listed map[string]AzureBatch
}

func (t *tick) count(f func(r *TickReport)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f(&t.rep)
}

// Poll runs one tick of the batch-poll timer: every active job is read
// (a range query per run of a tenant's jobs, not a point read each) and
// moved on (Azure polled no more often than PollInterval, cancellations
// sent, finished parts harvested, alerts raised), at most Concurrency jobs
// at once, the due batches' states read from Azure's batch list a page
// at a time rather than with a GET each; then held parts are admitted, fairly across tenants, as far as
// each deployment's enqueued-token quota allows. One job's failure is
// logged and counted and never stops the others; Poll itself fails only
// when the list of active jobs cannot be read.
func (s *Service) Poll(ctx context.Context) (TickReport, error) {
	start := time.Now()
	var id [6]byte
	if _, err := io.ReadFull(s.o.Rand, id[:]); err != nil {
		return TickReport{}, fmt.Errorf("poll: owner id: %w", err)
	}
	t := &tick{owner: "poller-" + hex.EncodeToString(id[:])}
	log := zerolog.Ctx(ctx)
	refs, err := s.o.Jobs.ListActive(ctx)
	if err != nil {
		return TickReport{}, fmt.Errorf("poll: list active jobs: %w", err)
	}
	t.rep.Jobs = len(refs)
	read := s.readActive(ctx, refs)
	t.listed = s.listDue(ctx, read)

	jobs := make([]*Job, len(refs))
	sem := make(chan struct{}, s.o.Concurrency)
	var wg sync.WaitGroup
	for i, ref := range refs {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			defer func() {
				if p := recover(); p != nil {
					log.Error().Str("job", ref.ID).Str("tenant", ref.Tenant).Msgf("poll of job panicked: %v", p)
					t.count(func(r *TickReport) { r.Failed++ })
				}
			}()
			jctx := log.With().Str("job", ref.ID).Str("tenant", ref.Tenant).Logger().WithContext(ctx)
			var pre *Job
			if j, ok := read[ref.ID]; ok && j.Tenant == ref.Tenant {
				pre = &j
			}
			j, err := s.pollJob(jctx, t, ref, pre)
			if err != nil {
				if !errors.Is(err, errLeaseLost) && !errors.Is(err, context.Canceled) {
					zerolog.Ctx(jctx).Error().Err(err).Msg("poll of job failed")
					t.count(func(r *TickReport) { r.Failed++ })
				}
			}
			jobs[i] = j
		}()
	}
	wg.Wait()
	live := jobs[:0]
	for _, j := range jobs {
		if j != nil {
			live = append(live, j)
		}
	}
	live = s.packJobs(ctx, t, live)
	s.admit(ctx, t, live)
	t.rep.Duration = time.Since(start)
	log.Info().Int("jobs", t.rep.Jobs).Int("polled", t.rep.Polled).Int("admitted", t.rep.Admitted).
		Int("refused", t.rep.Refused).Int("harvested", t.rep.Harvested).Int("failed", t.rep.Failed).
		Dur("duration", t.rep.Duration).Msg("batch poll tick")
	return t.rep, nil
}

// pollJob moves one job on, from pre, the job as the tick read it, or
// (nil) from a point read. It returns the job as it now stands (nil if
// there is none), for admission. Every write is conditional on the ETag
// of what was read, so a job changed since is read again first.
func (s *Service) pollJob(ctx context.Context, t *tick, ref ActiveRef, pre *Job) (*Job, error) {
	var j Job
	var err error
	if pre != nil {
		j = *pre
	} else {
		j, err = s.o.Jobs.Get(ctx, ref.Tenant, ref.ID)
	}
	if errors.Is(err, ErrNotFound) {
		// An index entry whose job was never recorded (a refused or crashed
		// submission): dropped once no submission can still be running.
		if s.now().Sub(ref.Since) > s.o.LeaseTTL {
			return nil, s.o.Jobs.Unmark(ctx, ref.ID)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !j.Active() {
		return nil, s.o.Jobs.Unmark(ctx, j.ID)
	}
	if j.leasedByOther(t.owner, s.now()) {
		return &j, nil
	}
	var errs []error
	if j, err = s.cancelParts(ctx, j); err != nil {
		errs = append(errs, err)
	}
	if j, err = s.pollParts(ctx, t, j); err != nil {
		errs = append(errs, err)
	}
	if j, err = s.deadlines(ctx, j); err != nil {
		errs = append(errs, err)
	}
	if j, err = s.harvestParts(ctx, t, j); err != nil {
		errs = append(errs, err)
	}
	if j, err = s.fallbackParts(ctx, t, j); err != nil {
		errs = append(errs, err)
	}
	if j, err = s.cleanup(ctx, j); err != nil {
		errs = append(errs, err)
	}
	if j, err = s.watch(ctx, j); err != nil {
		errs = append(errs, err)
	}
	if !j.Active() {
		if err := s.o.Jobs.Unmark(ctx, j.ID); err != nil {
			errs = append(errs, err)
		}
	}
	return &j, errors.Join(errs...)
}
