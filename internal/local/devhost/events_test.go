package devhost

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestWait_PastAndFutureEvents: Wait finds an event recorded before it was
// called, one recorded while it waits, and gives up when its context ends.
func TestWait_PastAndFutureEvents(t *testing.T) {
	t.Parallel()
	h := &Host{journal: newJournal()}
	h.record(Event{Kind: Invoked, Function: "a"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if e, err := h.Wait(ctx, func(e Event) bool { return e.Function == "a" }); err != nil || e.Kind != Invoked || e.At.IsZero() {
		t.Fatalf("past event: %+v, %v", e, err)
	}
	got := make(chan Event, 1)
	go func() {
		e, _ := h.Wait(ctx, func(e Event) bool { return e.Function == "b" })
		got <- e
	}()
	for i := 0; i < 3; i++ {
		h.record(Event{Kind: Settled, Function: "other"})
	}
	h.record(Event{Kind: Settled, Function: "b", DeliveryCount: 2})
	if e := <-got; e.Function != "b" || e.DeliveryCount != 2 {
		t.Errorf("future event: %+v", e)
	}
	short, stop := context.WithCancel(context.Background())
	stop()
	if _, err := h.Wait(short, func(Event) bool { return false }); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait after cancel = %v", err)
	}
	if n := len(h.Events()); n != 5 {
		t.Errorf("Events() has %d events, want 5", n)
	}
}

// TestJournal_DropsTheOldest keeps the journal bounded.
func TestJournal_DropsTheOldest(t *testing.T) {
	t.Parallel()
	j := newJournal()
	for i := 0; i <= journalLimit; i++ {
		j.record(Event{DeliveryCount: i})
	}
	if n := len(j.events); n > journalLimit || j.events[n-1].DeliveryCount != journalLimit {
		t.Errorf("%d events, last %+v", n, j.events[n-1])
	}
}

// TestWaitCount_CountsFinishedInvocationsPerFunction: only Invoked events
// count, per function, past the journal's trimming; WaitCount returns once
// the count is reached and names what it waited for when ctx ends first.
func TestWaitCount_CountsFinishedInvocationsPerFunction(t *testing.T) {
	t.Parallel()
	h := &Host{journal: newJournal()}
	for i := 0; i <= journalLimit; i++ {
		h.record(Event{Kind: Invoked, Function: "a"})
	}
	h.record(Event{Kind: Settled, Function: "b"})
	h.record(Event{Kind: Invoked, Function: "b", Outcome: "failed"})
	if a, b := h.Finished("a"), h.Finished("b"); a != journalLimit+1 || b != 1 {
		t.Fatalf("Finished: a %d, b %d; want %d and 1", a, b, journalLimit+1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.WaitCount(ctx, "a", journalLimit+1); err != nil {
		t.Fatalf("WaitCount of what already finished: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- h.WaitCount(ctx, "b", 3) }()
	h.record(Event{Kind: Invoked, Function: "b"})
	h.record(Event{Kind: Invoked, Function: "c"})
	h.record(Event{Kind: Invoked, Function: "b"})
	if err := <-done; err != nil || h.Finished("b") != 3 {
		t.Fatalf("WaitCount(b, 3) = %v with %d finished", err, h.Finished("b"))
	}
	short, stop := context.WithCancel(context.Background())
	stop()
	if err := h.WaitCount(short, "c", 2); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "2 invocations of c (1 finished)") {
		t.Errorf("WaitCount after cancel = %v", err)
	}
}
