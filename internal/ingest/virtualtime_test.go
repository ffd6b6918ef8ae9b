package ingest_test

// A copy of internal/llm's quota-scenario clock (test files cannot be
// shared across packages): see there.

import (
	"context"
	"sync"
	"time"

	"github.com/offpath/offpath/internal/aoaisim"
)

// virtualTime is the quota scenario's clock. The limiter (as its Clock),
// the client (Now and Sleep) and the simulator's rate limiter (through
// sim, a frozen aoaisim.Clock advanced in step) all read it, so no real
// latency, race detector or busy CPU can separate their views of the
// window. It moves only when every worker is blocked on it, in the
// limiter's queue or in a back-off, and then straight to the earliest
// timer.
type virtualTime struct {
	mu       sync.Mutex
	now      time.Time
	timers   []*vtimer
	sleepers int
	sim      *aoaisim.Clock
}

type vtimer struct {
	at      time.Time
	ch      chan time.Time
	stopped bool
}

func newVirtualTime(start time.Time) *virtualTime {
	return &virtualTime{now: start, sim: aoaisim.NewClock(start, 0)}
}

func (v *virtualTime) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

// After is ratelimit.Clock's timer.
func (v *virtualTime) After(d time.Duration) (<-chan time.Time, func() bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t := &vtimer{at: v.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- v.now
		t.stopped = true
	} else {
		v.timers = append(v.timers, t)
	}
	return t.ch, func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// Sleep is the client's wait between attempts.
func (v *virtualTime) Sleep(ctx context.Context, d time.Duration) error {
	ch, stop := v.After(d)
	v.mu.Lock()
	v.sleepers++
	v.mu.Unlock()
	defer func() {
		v.mu.Lock()
		v.sleepers--
		v.mu.Unlock()
	}()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		stop()
		return ctx.Err()
	}
}

// blocked counts workers sleeping, and reports whether a fired timer has
// not been received yet (its worker is about to run).
func (v *virtualTime) blocked() (sleepers int, firing bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, t := range v.timers {
		if !t.stopped && len(t.ch) > 0 {
			firing = true
		}
	}
	return v.sleepers, firing
}

// advance moves to the earliest live timer and fires every timer due. It
// returns false when there is none.
func (v *virtualTime) advance() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	live := v.timers[:0]
	var next time.Time
	for _, t := range v.timers {
		if t.stopped {
			continue
		}
		live = append(live, t)
		if next.IsZero() || t.at.Before(next) {
			next = t.at
		}
	}
	v.timers = live
	if next.IsZero() {
		return false
	}
	if d := next.Sub(v.now); d > 0 {
		v.now = next
		v.sim.Advance(d)
	}
	for _, t := range v.timers {
		if !t.stopped && !t.at.After(v.now) {
			t.ch <- v.now
			t.stopped = true
		}
	}
	return true
}

// drive advances v whenever all workers are blocked: queued() in the
// limiter, or asleep. It returns when ctx ends; at reports the moments
// the caller asked to observe (each called while the system is still).
func (v *virtualTime) drive(ctx context.Context, workers func() int, queued func() int, still func(now time.Time) bool) {
	quiet := 0
	for ctx.Err() == nil {
		time.Sleep(200 * time.Microsecond)
		sleepers, firing := v.blocked()
		if firing || sleepers+queued() < workers() {
			quiet = 0
			continue
		}
		if quiet++; quiet < 3 { // still for three looks in a row: nothing is about to run
			continue
		}
		quiet = 0
		if !still(v.Now()) {
			return
		}
		v.advance()
	}
}
