package poll_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/testing/poll"
)

// TestWithin_AsksUntilTheConditionHolds: a condition that holds on the
// third ask is reported as held after exactly three asks.
func TestWithin_AsksUntilTheConditionHolds(t *testing.T) {
	t.Parallel()
	asks := 0
	if !poll.Within(10*time.Second, func() bool { asks++; return asks == 3 }) || asks != 3 {
		t.Errorf("held after %d asks, want 3", asks)
	}
}

// TestWithin_GivesUpAtTheDeadline: a condition that never holds is asked
// at least twice (once at the start, once at the deadline) and reported
// as not held.
func TestWithin_GivesUpAtTheDeadline(t *testing.T) {
	t.Parallel()
	asks := 0
	if poll.Within(5*time.Millisecond, func() bool { asks++; return false }) || asks < 2 {
		t.Errorf("Within of a false condition: %d asks", asks)
	}
}

// TestUntil_FailsNamingWhatItWaitedFor runs Until against a recorder.
func TestUntil_FailsNamingWhatItWaitedFor(t *testing.T) {
	t.Parallel()
	r := &recorder{}
	done := make(chan struct{})
	go func() { // Fatalf ends the goroutine, as it does a test's
		defer close(done)
		poll.Until(r, time.Millisecond, "the moon", func() bool { return false })
	}()
	<-done
	if !strings.Contains(r.msg, "waiting for the moon") {
		t.Errorf("failure %q", r.msg)
	}
}

type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
