package ratelimit_test

import (
	"testing"
	"time"

	"github.com/offpath/offpath/internal/ratelimit/ratelimittest"
)

// fakeClock is the tests' manual clock.
type fakeClock = ratelimittest.ManualClock

func newFakeClock() *fakeClock { return ratelimittest.NewManualClock(time.Now()) }

// eventually polls cond for up to five seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
