package ratelimittest

import (
	"context"
	"time"
)

// ScaledClock is virtual time running speed times faster than real time
// from a common origin: every process of a fleet scenario that is given
// the same origin, base and speed reads the same time, the simulator
// (aoaisim.NewClock(base, speed)) included, so a minute's rate window
// passes in a fraction of one.
type ScaledClock struct {
	origin time.Time // real
	base   time.Time // virtual, at origin
	speed  float64
}

// NewScaledClock returns the clock reading base at the real time origin.
func NewScaledClock(origin, base time.Time, speed float64) ScaledClock {
	return ScaledClock{origin: origin, base: base, speed: speed}
}

// Now is the virtual time.
func (c ScaledClock) Now() time.Time {
	return c.base.Add(time.Duration(float64(time.Since(c.origin)) * c.speed))
}

// Real is how long d of virtual time lasts.
func (c ScaledClock) Real(d time.Duration) time.Duration { return time.Duration(float64(d) / c.speed) }

// After is ratelimit.Clock's timer.
func (c ScaledClock) After(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(c.Real(d))
	return t.C, t.Stop
}

// Sleep waits d of virtual time, or until ctx ends.
func (c ScaledClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(c.Real(d))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
