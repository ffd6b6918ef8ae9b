// Package ratelimittest drives rate-limited scenarios in virtual time, for
// the tests of the packages that wait on package ratelimit's limiter and on
// the simulator's limits (azopenai, ingest). Only tests import it.
package ratelimittest

import (
	"context"
	"sync"
	"time"

	"github.com/offpath/offpath/internal/local/aoaisim"
)

// VirtualTime is a quota scenario's clock. The limiter (as its Clock),
// the client (Now and Sleep) and the simulator's rate limiter (through
// sim, a frozen aoaisim.Clock advanced in step) all read it, so no real
// latency, race detector or busy CPU can separate their views of the
// window. It moves only when every worker is blocked on it, in the
// limiter's queue or in a back-off, and then straight to the earliest
// timer.
type VirtualTime struct {
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

// NewVirtualTime returns a clock standing at start, with a simulator clock
// frozen at start that it advances in step.
func NewVirtualTime(start time.Time) *VirtualTime {
	return &VirtualTime{now: start, sim: aoaisim.NewClock(start, 0)}
}

// Sim is the simulator's clock (aoaisim.Config.RateClock), moved in step.
func (v *VirtualTime) Sim() *aoaisim.Clock { return v.sim }

// Now is the virtual time.
func (v *VirtualTime) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

// After is ratelimit.Clock's timer.
func (v *VirtualTime) After(d time.Duration) (<-chan time.Time, func() bool) {
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
func (v *VirtualTime) Sleep(ctx context.Context, d time.Duration) error {
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
func (v *VirtualTime) blocked() (sleepers int, firing bool) {
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
func (v *VirtualTime) advance() bool {
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

// Drive advances v whenever all workers are blocked: queued() in the
// limiter, or asleep. It returns when ctx ends; at reports the moments
// the caller asked to observe (each called while the system is still).
func (v *VirtualTime) Drive(ctx context.Context, workers func() int, queued func() int, still func(now time.Time) bool) {
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
