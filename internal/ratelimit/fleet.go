package ratelimit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Defaults of FleetOptions.
const (
	DefaultRenew = 10 * time.Second
	DefaultTTL   = 30 * time.Second
	DefaultSkew  = time.Second
)

// saveAttempts bounds one renewal's optimistic-concurrency retries.
const saveAttempts = 8

// minWake is the least time between two renewals (see Run).
const minWake = 2 * time.Second

// FleetOptions tune a Fleet. Zero fields take the defaults.
type FleetOptions struct {
	// ID names this process in the pools; unique per process (a random
	// one by default).
	ID string
	// Renew is how often the process renews its leases (±10% jitter).
	// Default 10 s.
	Renew time.Duration
	// TTL is how long a lease lasts unrenewed. Default 30 s: three renewals.
	TTL time.Duration
	// Skew is the clock difference tolerated between processes, added to
	// every time another process relies on. Default 1 s.
	Skew time.Duration
	// Clock is the time source, the limiters' too. Default: real time.
	Clock Clock
	// Pause waits between conflicting saves. Default: a real sleep.
	Pause func(d time.Duration)
}

// FleetStats count a Fleet's storage operations.
type FleetStats struct {
	Loads, Saves, Conflicts, Failures int64
	// Fallbacks counts the times a lease ran out unrenewed (or none could
	// be had) and the static share took over.
	Fallbacks int64
}

// Fleet shares each deployment's quota among every process that calls it
// (see the package documentation): it leases this process's part from a
// LeaseStore and resizes the Set's limiters to it.
type Fleet struct {
	store  LeaseStore
	opts   FleetOptions
	reuse  time.Duration // a limiter's window plus the skew
	log    zerolog.Logger
	shares []*share // sorted by deployment

	mu    sync.Mutex
	stats FleetStats
}

// share is one deployment's lease as this process holds it.
type share struct {
	name     string
	lim      *Limiter
	quota    Limits // the whole deployment's
	static   Limits // the safe share without the store
	expires  time.Time
	leased   bool      // holds a lease (else: static or suspended)
	fallback bool      // on the static share since the store failed
	waited   int64     // the limiter's Stats().Waited at the last renewal
	steady   bool      // the last renewal changed nothing and every lease was its fair part
	wake     time.Time // when a part it wants stops cooling (zero: none)
}

// want is the fraction of the quota the share asks the pool for: all of
// it when requests had to wait for room since the last renewal (what it
// would use is not known, only that it is more than it has), else what
// its window and queue hold, with headroom; and the grain its limit is
// used in (see Usage.Charge).
func (s *share) want() (float64, int64) {
	st, u := s.lim.Stats(), s.lim.Usage()
	waited := st.Waited > s.waited || st.Queued > 0
	s.waited = st.Waited
	if waited {
		return 1, u.Charge
	}
	return want(u, s.quota), u.Charge
}

// NewFleet shares the quotas (the whole deployments', by name) of the
// set's limiters; static are the per-process shares used while the store
// cannot be reached (each must be safe with every process on it: the
// quota divided by the most processes the platform runs). Deployments
// without a quota keep their limiter as it is. It does no I/O: until Run's
// first renewal the shared limiters admit nothing.
func NewFleet(set *Set, quotas, static map[string]Limits, store LeaseStore, opts FleetOptions, logger zerolog.Logger) (*Fleet, error) {
	opts.Renew = cmp.Or(opts.Renew, DefaultRenew)
	opts.TTL = cmp.Or(opts.TTL, DefaultTTL)
	opts.Skew = cmp.Or(opts.Skew, DefaultSkew)
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if opts.Pause == nil {
		opts.Pause = time.Sleep
	}
	if opts.ID == "" {
		opts.ID = fmt.Sprintf("p%016x", rand.Uint64())
	}
	if opts.TTL <= opts.Renew {
		return nil, fmt.Errorf("rate leases: ttl %v must be longer than the renewal interval %v", opts.TTL, opts.Renew)
	}
	f := &Fleet{store: store, opts: opts, log: logger.With().Str("component", "ratelimit").Str("instance", opts.ID).Logger()}
	now := opts.Clock.Now()
	for _, name := range slices.Sorted(maps.Keys(quotas)) {
		q := quotas[name]
		lim := set.Limiter(name)
		if lim == nil {
			return nil, fmt.Errorf("rate leases: no limiter for deployment %s", name)
		}
		if q.TPM <= 0 || q.RPM <= 0 {
			return nil, fmt.Errorf("rate leases %s: a shared quota needs both tpm and rpm", name)
		}
		f.reuse = max(f.reuse, lim.wins[0].dur+opts.Skew)
		f.shares = append(f.shares, &share{name: name, lim: lim, quota: q, static: static[name]})
		lim.Suspend(now.Add(opts.Renew))
	}
	return f, nil
}

// Stats returns a snapshot of the counters.
func (f *Fleet) Stats() FleetStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func (f *Fleet) count(fn func(s *FleetStats)) {
	f.mu.Lock()
	fn(&f.stats)
	f.mu.Unlock()
}

// Run renews the leases until ctx ends, then gives them back. While every
// pool is steady (the last renewal changed nothing and every lease was its
// fair part) it renews half as often, well within the TTL; while a part
// it wants is cooling, it renews when that part is free.
func (f *Fleet) Run(ctx context.Context) {
	for {
		wait := f.opts.Renew
		if f.Renew(ctx) != nil {
			wait = min(wait, 2*time.Second) // try again soon
		} else if f.steady() {
			wait = max(wait, min(2*f.opts.Renew, (f.opts.TTL-f.opts.Skew)*2/3))
		}
		wait = time.Duration(float64(wait) * (0.9 + 0.2*rand.Float64()))
		// A part this process wants that stops cooling sooner is taken then.
		now := f.opts.Clock.Now()
		for _, s := range f.shares {
			if d := s.wake.Sub(now); !s.wake.IsZero() && d < wait {
				wait = max(d, minWake)
			}
		}
		timer, stop := f.opts.Clock.After(wait)
		select {
		case <-ctx.Done():
			stop()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			f.Release(rctx)
			cancel()
			return
		case <-timer:
		}
	}
}

func (f *Fleet) steady() bool {
	for _, s := range f.shares {
		if !s.steady {
			return false
		}
	}
	return true
}

// Renew renews every lease once (a load and a save each, more on
// conflicts). A lease that could not be renewed is kept until it expires,
// then the static share takes over until the store answers again with a
// lease at least as large; the error says what failed.
func (f *Fleet) Renew(ctx context.Context) error {
	var errs []error
	for _, s := range f.shares {
		next, err := f.renew(ctx, s)
		now := f.opts.Clock.Now()
		switch {
		case err == nil && s.fallback && (next.TPM < s.static.TPM || next.RPM < s.static.RPM):
			// Back, but the pool has less for it than the static share yet
			// (its own expired lease is still cooling): stay on the static
			// share, which its recent admissions were made under.
		case err == nil:
			if s.fallback {
				f.log.Info().Str("deployment", s.name).Int64("tpm", next.TPM).Int64("rpm", next.RPM).
					Msg("rate limit: the lease store answers again; sharing the quota with the fleet")
			}
			s.fallback = false
			s.lim.Resize(next)
			if next.TPM <= 0 || next.RPM <= 0 {
				s.lim.Suspend(now.Add(f.opts.Renew))
			} else {
				s.lim.Suspend(time.Time{})
			}
		case s.fallback:
		case !s.leased || !now.Before(s.expires):
			f.count(func(st *FleetStats) { st.Fallbacks++ })
			f.log.Warn().Err(err).Str("deployment", s.name).Int64("tpm", s.static.TPM).Int64("rpm", s.static.RPM).
				Msg("rate limit: the lease store cannot be reached; using the static per-instance share until it can")
			s.fallback, s.leased = true, false
			s.lim.Resize(s.static)
			s.lim.Suspend(time.Time{})
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// renew renews one lease, or takes one, and returns it. Only a decrease
// is applied here, before it is saved; the caller applies the rest.
func (f *Fleet) renew(ctx context.Context, s *share) (Limits, error) {
	for attempt := range saveAttempts {
		if attempt > 0 {
			f.opts.Pause(time.Duration(rand.IntN(20*attempt)+1) * time.Millisecond)
		}
		pool, version, err := f.store.Load(ctx, s.name)
		f.count(func(st *FleetStats) { st.Loads++ })
		if err != nil {
			f.count(func(st *FleetStats) { st.Failures++ })
			return Limits{}, fmt.Errorf("rate lease %s: %w", s.name, err)
		}
		now := f.opts.Clock.Now()
		pool.tidy(now, f.reuse)
		if pool.Members == nil {
			pool.Members = map[string]Lease{}
		}
		cur := pool.Members[f.opts.ID] // zero when it expired or is new
		w, grain := s.want()
		wants := map[string]float64{f.opts.ID: w}
		for id, m := range pool.Members {
			if id != f.opts.ID {
				wants[id] = m.Want
			}
		}
		fair := fairShares(wants)
		target := part(s.quota, fair[f.opts.ID])
		// A limit admits whole requests only: a fair part of 7,500 tokens
		// serves 11 requests of 626 and wastes 614, and sixteen such parts
		// waste a twelfth of the quota. So the token part is rounded to
		// whole requests, up when the pool has the room (the first to renew
		// get the odd request), down otherwise.
		tokTarget := target.TPM
		if up := (tokTarget + grain - 1) / grain * grain; up > tokTarget {
			tokTarget = up
		}
		held := pool.held(f.opts.ID)
		free := Limits{TPM: max(0, s.quota.TPM-held.TPM), RPM: max(0, s.quota.RPM-held.RPM)}
		next := Limits{TPM: min(tokTarget, free.TPM), RPM: min(target.RPM, free.RPM)}
		if whole := next.TPM / grain * grain; whole > 0 && whole < next.TPM && next.TPM < tokTarget {
			next.TPM = whole
		}
		// A small decrease is not worth the cooling it costs (wants move a
		// little at every renewal); the lease still fits beside the others.
		if next.TPM < cur.TPM && (cur.TPM <= tokTarget || cur.TPM-next.TPM <= cur.TPM/20) && cur.TPM <= free.TPM {
			next.TPM = cur.TPM
		}
		if next.RPM < cur.RPM && cur.RPM-next.RPM <= max(cur.RPM/20, 1) && cur.RPM <= free.RPM {
			next.RPM = cur.RPM
		}
		// What a decrease gives up cools as what was admitted against it
		// leaves the window.
		keep := Limits{TPM: min(cur.TPM, next.TPM), RPM: min(cur.RPM, next.RPM)}
		if keep != (Limits{TPM: cur.TPM, RPM: cur.RPM}) {
			for _, st := range s.lim.Released(Limits{TPM: cur.TPM, RPM: cur.RPM}, keep) {
				st.At = st.At.Add(f.opts.Skew)
				pool.cool(st)
			}
			if s.leased && !s.fallback {
				s.lim.Resize(keep)
			}
		}
		pool.Members[f.opts.ID] = Lease{TPM: next.TPM, RPM: next.RPM, Want: w, Expires: now.Add(f.opts.TTL)}
		_, err = f.store.Save(ctx, s.name, pool, version)
		f.count(func(st *FleetStats) { st.Saves++ })
		if errors.Is(err, ErrConflict) {
			f.count(func(st *FleetStats) { st.Conflicts++ })
			continue
		}
		if err != nil {
			f.count(func(st *FleetStats) { st.Failures++ })
			return Limits{}, fmt.Errorf("rate lease %s: %w", s.name, err)
		}
		s.leased, s.expires = true, now.Add(f.opts.TTL)
		s.wake = time.Time{}
		if next.TPM+grain < tokTarget || next.RPM+1 < target.RPM { // short of more than a request
			for _, c := range pool.Cooling { // sorted by time
				if c.At.After(now) {
					s.wake = c.At
					break
				}
			}
		}
		s.steady = next == (Limits{TPM: cur.TPM, RPM: cur.RPM}) && len(pool.Cooling) == 0
		for id, m := range pool.Members {
			if id != f.opts.ID && m.TPM < part(s.quota, fair[id]).TPM*9/10 {
				s.steady = false // another waits for its part
			}
		}
		return next, nil
	}
	return Limits{}, fmt.Errorf("rate lease %s: %d conflicting saves in a row", s.name, saveAttempts)
}

// Release gives every lease back: this process admits nothing more, and
// the others may use its parts as its admissions leave the window.
func (f *Fleet) Release(ctx context.Context) {
	for _, s := range f.shares {
		s.lim.Suspend(f.opts.Clock.Now().Add(f.opts.TTL))
		if !s.leased {
			continue
		}
		if err := f.release(ctx, s); err != nil {
			f.log.Warn().Err(err).Str("deployment", s.name).Msg("rate limit: the lease could not be given back; it expires on its own")
		}
		s.leased = false
	}
}

func (f *Fleet) release(ctx context.Context, s *share) error {
	for attempt := range saveAttempts {
		if attempt > 0 {
			f.opts.Pause(time.Duration(rand.IntN(20*attempt)+1) * time.Millisecond)
		}
		pool, version, err := f.store.Load(ctx, s.name)
		f.count(func(st *FleetStats) { st.Loads++ })
		if err != nil {
			return err
		}
		pool.tidy(f.opts.Clock.Now(), f.reuse)
		cur, ok := pool.Members[f.opts.ID]
		if !ok {
			return nil
		}
		delete(pool.Members, f.opts.ID)
		for _, st := range s.lim.Released(Limits{TPM: cur.TPM, RPM: cur.RPM}, Limits{}) {
			st.At = st.At.Add(f.opts.Skew)
			pool.cool(st)
		}
		_, err = f.store.Save(ctx, s.name, pool, version)
		f.count(func(st *FleetStats) { st.Saves++ })
		if !errors.Is(err, ErrConflict) {
			return err
		}
		f.count(func(st *FleetStats) { st.Conflicts++ })
	}
	return fmt.Errorf("%d conflicting saves in a row", saveAttempts)
}
