package ratelimit

import "time"

// Clock is a Limiter's time source; tests substitute a fake.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed, and a
	// function that stops it.
	After(d time.Duration) (<-chan time.Time, func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) After(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}
