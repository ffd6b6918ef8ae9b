package ratelimit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/offpath/offpath/internal/outcome"
)

// ErrDeadline is wrapped in the error Wait returns when room for the request
// would come only after the context's deadline.
var ErrDeadline = errors.New("rate limit wait would exceed the deadline")

// Defaults of Options.
const (
	DefaultWindow = 61 * time.Second
	DefaultBurst  = 10 * time.Second
)

// Limits are a deployment's rate limits. Zero means no limit.
type Limits struct {
	// TPM is tokens per minute (per Window).
	TPM int64 `json:"tpm"`
	// RPM is requests per minute (per Window).
	RPM int64 `json:"rpm"`
}

// PerInstance divides a deployment's quota among instances, rounding down
// but never to zero.
func PerInstance(quota Limits, instances int) Limits {
	n := int64(max(instances, 1))
	share := func(v int64) int64 {
		if v <= 0 {
			return 0
		}
		return max(v/n, 1)
	}
	return Limits{TPM: share(quota.TPM), RPM: share(quota.RPM)}
}

// Options tune a Limiter. Zero fields take the defaults.
type Options struct {
	// Window is the span the limits apply to. Default 61 s.
	Window time.Duration
	// Burst is a shorter span that gets Burst/Window of the request limit
	// (rounded up). Default 10 s; negative turns it off.
	Burst time.Duration
	// Clock is the time source. Default: real time.
	Clock Clock
}

// Stats count what a Limiter did.
type Stats struct {
	Admitted int64         // requests let through
	Tokens   int64         // tokens charged
	Waited   int64         // requests that had to wait
	WaitTime time.Duration // total time spent waiting by admitted requests
	GaveUp   int64         // requests refused for their deadline or cancelled
	Queued   int           // requests waiting now
	// Throttled counts 429s reported by Observe; Held the answers whose
	// remaining tokens or requests made the limiter pause.
	Throttled, Held int64
}

// Limiter paces the requests to one deployment. It is safe for concurrent
// use; share one per deployment per process.
type Limiter struct {
	name  string
	clock Clock

	limits Limits // in force (see Resize)

	mu        sync.Mutex
	log       []entry   // admissions, oldest first
	wins      []*window // the spans enforced, longest first
	queue     []*waiter // FIFO; the head is the next to be admitted
	hold      time.Time // nothing is admitted before it (see Observe)
	suspended time.Time // nor while it is set (see Suspend)
	stats     Stats
}

type entry struct {
	at     time.Time
	tokens int64 // charged
	cost   int64 // counted in the token window: tokens, at most the limit
}

type waiter struct {
	tokens int64
	wake   chan struct{} // buffered 1: "look again"
}

// New returns a Limiter for the deployment name with the given limits.
func New(name string, limits Limits, opts Options) (*Limiter, error) {
	opts.Window = cmp.Or(opts.Window, DefaultWindow)
	opts.Burst = cmp.Or(opts.Burst, DefaultBurst)
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if limits.TPM < 0 || limits.RPM < 0 {
		return nil, fmt.Errorf("rate limit %s: negative limit", name)
	}
	if opts.Window <= 0 {
		return nil, fmt.Errorf("rate limit %s: window %v must be positive", name, opts.Window)
	}
	l := &Limiter{name: name, clock: opts.Clock, limits: limits}
	l.wins = append(l.wins, &window{dur: opts.Window, tokCap: limits.TPM, reqCap: limits.RPM})
	if opts.Burst > 0 && opts.Burst < opts.Window {
		l.wins = append(l.wins, &window{dur: opts.Burst, reqCap: burstShare(limits.RPM, opts.Burst, opts.Window)})
	}
	return l, nil
}

// burstShare is the request limit of the burst window: burst/window of
// rpm, rounded up (0, unlimited, when rpm is).
func burstShare(rpm int64, burst, window time.Duration) int64 {
	if rpm <= 0 {
		return 0
	}
	return max(1, (rpm*int64(burst)+int64(window)-1)/int64(window))
}

// Stats returns a snapshot of the counters.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Queued = len(l.queue)
	return s
}

// Wait blocks until the deployment has room for a request charged tokens
// (prompt + max completion tokens), then charges it. It returns a transient
// error, without waiting, if the room would come after ctx's deadline, and
// one wrapping ctx's error if ctx ends while waiting.
func (l *Limiter) Wait(ctx context.Context, tokens int64) error {
	tokens = max(tokens, 0)
	l.mu.Lock()
	now := l.clock.Now()
	l.expire(now)
	if len(l.queue) == 0 && l.fits(now, tokens) {
		l.charge(now, tokens)
		l.mu.Unlock()
		return nil
	}
	if err := l.beforeDeadline(ctx, now, l.earliest(now, tokens)); err != nil {
		l.stats.GaveUp++
		l.mu.Unlock()
		return err
	}
	w := &waiter{tokens: tokens, wake: make(chan struct{}, 1)}
	l.queue = append(l.queue, w)
	l.stats.Waited++
	start := now
	l.mu.Unlock()

	for {
		l.mu.Lock()
		now = l.clock.Now()
		l.expire(now)
		wait := time.Duration(-1) // not the head: wait to be woken
		if l.queue[0] == w {
			if l.fits(now, tokens) {
				l.charge(now, tokens)
				l.stats.WaitTime += now.Sub(start)
				l.dequeue(w)
				l.mu.Unlock()
				return nil
			}
			at := l.fitTime(now, tokens)
			if err := l.beforeDeadline(ctx, now, at); err != nil {
				l.stats.GaveUp++
				l.dequeue(w)
				l.mu.Unlock()
				return err
			}
			wait = at.Sub(now)
		}
		l.mu.Unlock()

		var timer <-chan time.Time
		stop := func() bool { return false }
		if wait >= 0 {
			timer, stop = l.clock.After(wait)
		}
		select {
		case <-ctx.Done():
			stop()
			l.mu.Lock()
			l.stats.GaveUp++
			l.dequeue(w)
			l.mu.Unlock()
			return outcome.Retry(fmt.Errorf("rate limit %s: %w", l.name, ctx.Err()), 0)
		case <-w.wake:
		case <-timer:
		}
		stop()
	}
}

// beforeDeadline returns the transient error for a wait until at that ctx's
// deadline does not allow.
func (l *Limiter) beforeDeadline(ctx context.Context, now, at time.Time) error {
	if d, ok := ctx.Deadline(); ok && at.After(d) {
		wait := at.Sub(now)
		return outcome.Retry(fmt.Errorf("rate limit %s: room in %v, deadline in %v: %w", l.name, wait.Round(time.Millisecond), d.Sub(now).Round(time.Millisecond), ErrDeadline), wait)
	}
	return nil
}

// dequeue removes w and, if the head changed, wakes the new head.
func (l *Limiter) dequeue(w *waiter) {
	for i, q := range l.queue {
		if q != w {
			continue
		}
		l.queue = append(l.queue[:i], l.queue[i+1:]...)
		if i == 0 && len(l.queue) > 0 {
			select {
			case l.queue[0].wake <- struct{}{}:
			default:
			}
		}
		return
	}
}

// earliest is when a request of tokens, queued behind the current waiters,
// can be admitted if none of them gives up: the queue is played forward on
// a copy of the log, each waiter admitted as soon as it fits.
func (l *Limiter) earliest(now time.Time, tokens int64) time.Time {
	if len(l.queue) == 0 {
		return l.fitTime(now, tokens)
	}
	sim := &Limiter{log: slices.Clone(l.log), hold: l.hold, suspended: l.suspended}
	for _, w := range l.wins {
		c := *w
		sim.wins = append(sim.wins, &c)
	}
	at := now
	for _, w := range l.queue {
		at = sim.fitTime(at, w.tokens)
		sim.expire(at)
		sim.charge(at, w.tokens)
	}
	return sim.fitTime(at, tokens)
}
