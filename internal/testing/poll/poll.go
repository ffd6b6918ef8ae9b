// Package poll is test support: it waits for a condition that no event
// announces (a row in Table Storage, a batch's status at the simulator) by
// asking again until it holds or a deadline passes. It is the one bounded
// poll the tests share; where the code under test can tell when something
// happened (the dev host's Wait and WaitCount, a channel, a virtual clock's
// pending timers), tests wait for that instead.
package poll

import (
	"testing"
	"time"
)

// firstPause and maxPause bound the pause between two asks: short at
// first, so that a condition that is nearly there costs little, then
// doubling, so that a slow one does not hammer what it asks.
const (
	firstPause = time.Millisecond
	maxPause   = 100 * time.Millisecond
)

// Until asks cond until it holds and fails the test, naming what it waited
// for, if it still does not after timeout.
func Until(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Within(timeout, cond) {
		tb.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// Within asks cond until it holds or timeout passes, and reports whether it
// held: for a caller that has more to say than Until's message.
func Within(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	pause := firstPause
	for !cond() {
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(min(pause, time.Until(deadline)))
		pause = min(2*pause, maxPause)
	}
	return true
}
