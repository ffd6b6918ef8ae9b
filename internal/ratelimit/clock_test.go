package ratelimit_test

import (
	"time"

	"github.com/offpath/offpath/internal/testing/ratelimittest"
)

// fakeClock is the tests' manual clock.
type fakeClock = ratelimittest.ManualClock

func newFakeClock() *fakeClock { return ratelimittest.NewManualClock(time.Now()) }
