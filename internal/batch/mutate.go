package batch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// errLeaseLost: another poller took over the job (this one's lease ran out).
var errLeaseLost = errors.New("lease on the job lost")

// maxConflicts bounds the re-reads of one optimistic update.
const maxConflicts = 8

// update applies change to the job and writes it conditionally on its
// ETag; when the job changed meanwhile it is read again and change applied
// again, so change must be a pure function of the job it is given. It
// returns the job as stored. change may return errSkip to write nothing.
func (s *Service) update(ctx context.Context, j Job, change func(*Job) error) (Job, error) {
	for range maxConflicts {
		next := cloneJob(j)
		if err := change(&next); err != nil {
			if errors.Is(err, errSkip) {
				return j, nil
			}
			return j, err
		}
		next.derive()
		next.Updated = s.now()
		stored, err := s.o.Jobs.Update(ctx, next)
		if err == nil {
			if j.State != Harvested && stored.State == Harvested {
				s.tell(ctx, stored, "harvested")
			}
			return stored, nil
		}
		if !errors.Is(err, ErrConflict) {
			return j, err
		}
		if j, err = s.o.Jobs.Get(ctx, j.Tenant, j.ID); err != nil {
			return j, err
		}
	}
	return j, fmt.Errorf("update job %s: %w after %d attempts", j.ID, ErrConflict, maxConflicts)
}

// announceTimeout bounds the Announcer's call.
const announceTimeout = 5 * time.Second

// tell tells the Announcer of a job that has just been harvested, has
// just been found held too long, or has just started a part's deadline
// fallback (what says which). Its failure is logged,
// never returned: the tick goes on whatever it says.
func (s *Service) tell(ctx context.Context, j Job, what string) {
	if s.o.Announcer == nil || j.Tenant == PackTenant {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceTimeout)
	defer cancel()
	if err := s.o.Announcer.Announce(ctx, j); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("job", j.ID).Str("tenant", j.Tenant).Str("event", what).Msg("job not announced")
	}
}

// errSkip tells update there is nothing to write.
var errSkip = errors.New("nothing to change")

// claim takes the job's lease for owner, unless another poller holds a
// live one (then errLeaseLost).
func (s *Service) claim(ctx context.Context, j Job, owner string) (Job, error) {
	return s.update(ctx, j, func(j *Job) error {
		now := s.now()
		if j.leasedByOther(owner, now) {
			return errLeaseLost
		}
		if j.Lease.Owner == owner && j.Lease.Until.Sub(now) > s.o.LeaseTTL/2 {
			// Taken moments ago by this tick (with the write that saw a
			// batch end): the next write under it renews it.
			return errSkip
		}
		j.Lease = Lease{Owner: owner, Until: now.Add(s.o.LeaseTTL)}
		return nil
	})
}

// holding wraps a change made under owner's lease: it fails with
// errLeaseLost if the lease passed to someone else, and renews it.
func (s *Service) holding(owner string, change func(*Job) error) func(*Job) error {
	return func(j *Job) error {
		now := s.now()
		if j.Lease.Owner != owner && j.leasedByOther(owner, now) {
			return errLeaseLost
		}
		if err := change(j); err != nil {
			return err
		}
		j.Lease = Lease{Owner: owner, Until: now.Add(s.o.LeaseTTL)}
		return nil
	}
}

// release drops owner's lease.
func (s *Service) release(ctx context.Context, j Job, owner string) (Job, error) {
	return s.update(ctx, j, func(j *Job) error {
		if j.Lease.Owner != owner {
			return errSkip
		}
		j.Lease = Lease{}
		return nil
	})
}

// cloneJob deep-copies what update may change.
func cloneJob(j Job) Job {
	c := j
	c.Parts = make([]Part, len(j.Parts))
	for i, p := range j.Parts {
		p.PreviousBatchIDs = append([]string(nil), p.PreviousBatchIDs...)
		p.Errors = append(p.Errors[:0:0], p.Errors...)
		p.Copies = append([]FileCopy(nil), p.Copies...)
		if p.Fallback != nil {
			f := *p.Fallback
			p.Fallback = &f
		}
		c.Parts[i] = p
	}
	if j.Alerts != nil {
		c.Alerts = make(map[string]time.Time, len(j.Alerts))
		for k, v := range j.Alerts {
			c.Alerts[k] = v
		}
	}
	c.Cleanup = append([]string(nil), j.Cleanup...)
	c.CleanupBlobs = append([]string(nil), j.CleanupBlobs...)
	if j.Pack != nil {
		pk := *j.Pack
		pk.Members = append([]PackMember(nil), j.Pack.Members...)
		c.Pack = &pk
	}
	return c
}
