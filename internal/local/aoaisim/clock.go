package aoaisim

import (
	"context"
	"sync"
	"time"
)

// MaxSpeed bounds the clock factor so that simulated nanoseconds never
// overflow within a day of real time.
const MaxSpeed = 1e6

// Clock is simulated time: start + speed × elapsed real time, plus any jumps
// made with Advance. A speed of 0 freezes it, which makes tests deterministic:
// time then moves only through Advance. Batch progression, timestamps and file
// expiry follow the server's Clock; waiters wake as soon as the time they wait
// for is reached, however it is reached.
//
// A Clock is safe for concurrent use.
type Clock struct {
	realNow func() time.Time

	mu       sync.Mutex
	realBase time.Time // real time at the last re-anchoring
	simBase  time.Time // simulated time at realBase
	speed    float64
	changed  chan struct{} // closed and replaced on Advance and SetSpeed
}

// NewClock returns a clock that reads start now and runs at speed (clamped to
// [0, MaxSpeed]).
func NewClock(start time.Time, speed float64) *Clock {
	return newClockWithSource(start, speed, time.Now)
}

// RealClock returns a clock that follows real time.
func RealClock() *Clock { return NewClock(time.Now(), 1) }

func newClockWithSource(start time.Time, speed float64, realNow func() time.Time) *Clock {
	return &Clock{
		realNow:  realNow,
		realBase: realNow(),
		simBase:  start,
		speed:    clampSpeed(speed),
		changed:  make(chan struct{}),
	}
}

func clampSpeed(f float64) float64 {
	return min(max(f, 0), MaxSpeed)
}

// Now returns the simulated time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *Clock) nowLocked() time.Time {
	if c.speed == 0 {
		return c.simBase
	}
	elapsed := c.realNow().Sub(c.realBase)
	return c.simBase.Add(time.Duration(float64(elapsed) * c.speed))
}

// Speed returns the current factor.
func (c *Clock) Speed() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.speed
}

// SetSpeed changes the factor from now on; simulated time does not jump.
func (c *Clock) SetSpeed(f float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.simBase = c.nowLocked()
	c.realBase = c.realNow()
	c.speed = clampSpeed(f)
	c.notifyLocked()
}

// Advance moves simulated time forward by d (negative d is ignored).
func (c *Clock) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.simBase = c.nowLocked().Add(d)
	c.realBase = c.realNow()
	c.notifyLocked()
}

func (c *Clock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// WaitUntil blocks until simulated time reaches t, wake receives or is
// closed, or ctx is done (then it returns ctx's error).
func (c *Clock) WaitUntil(ctx context.Context, t time.Time, wake <-chan struct{}) error {
	for {
		c.mu.Lock()
		now, speed, changed := c.nowLocked(), c.speed, c.changed
		c.mu.Unlock()
		if !now.Before(t) {
			return nil
		}
		woken, err := waitChange(ctx, t.Sub(now), speed, changed, wake)
		if woken || err != nil {
			return err
		}
	}
}

// waitChange waits for the simulated span d to pass at speed, for the clock to
// change, for wake (woken is then true), or for ctx (its error is returned).
func waitChange(ctx context.Context, d time.Duration, speed float64, changed, wake <-chan struct{}) (woken bool, err error) {
	var timeout <-chan time.Time
	if speed > 0 {
		timer := time.NewTimer(time.Duration(float64(d)/speed) + time.Microsecond)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-wake:
		return true, nil
	case <-changed:
	case <-timeout:
	}
	return false, nil
}
