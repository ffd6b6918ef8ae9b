package devhost

import (
	"context"
	"errors"
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
