package devhost

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/offpath/offpath/internal/local/sbemu"
)

// EventKind says what an Event reports.
type EventKind string

const (
	// Invoked: an invocation finished (Outcome "succeeded" or "failed").
	Invoked EventKind = "invoked"
	// Settled: the Service Bus stand-in settled a message after its
	// invocation (Outcome completed, abandoned, deadlettered or unsettled).
	Settled EventKind = "settled"
	// BlobSkipped: a blob trigger did not run because the blob is gone or
	// changed (Reason says which); the extension counts that done.
	BlobSkipped EventKind = "blob-skipped"
	// BlobScanned: a blob trigger's container scan finished, having fired
	// Fired invocations.
	BlobScanned EventKind = "blob-scanned"
	// Sent: an invocation's Service Bus output binding sent a message
	// (Queue, MessageID; Body when it is small, as claim checks are).
	Sent EventKind = "sent"
)

// sentBodyLimit is the largest message body a Sent event keeps.
const sentBodyLimit = 8 << 10

// Event is one thing the dev host did, so that tests and tools wait for
// what happened instead of for time.
type Event struct {
	Kind         EventKind
	At           time.Time
	Function     string
	InvocationID string // Invoked
	Outcome      string // Invoked, Settled
	Err          string // Invoked: why the host failed the invocation
	Reason       string // BlobSkipped

	// Blob triggers: the blob ("container/name") and the bare ETag of the
	// version the invocation was for.
	Blob  string
	ETag  string
	Fired int // BlobScanned

	// Service Bus triggers: the queue, message and delivery.
	Queue         string
	MessageID     string
	DeliveryCount int
	Body          []byte // Sent, up to sentBodyLimit bytes
}

// journalLimit bounds the events kept; older ones are dropped.
const journalLimit = 10000

// journal keeps recent events and wakes their waiters.
type journal struct {
	mu       sync.Mutex
	events   []Event
	finished map[string]int // Invoked events per function, never trimmed
	changed  chan struct{}  // closed and replaced on every record
}

func newJournal() *journal {
	return &journal{finished: map[string]int{}, changed: make(chan struct{})}
}

func (j *journal) record(e Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if e.Kind == Invoked {
		j.finished[e.Function]++
	}
	if len(j.events) == journalLimit {
		j.events = append([]Event(nil), j.events[journalLimit/2:]...) // waiters may hold the old array
	}
	j.events = append(j.events, e)
	close(j.changed)
	j.changed = make(chan struct{})
}

func (h *Host) record(e Event) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	h.journal.record(e)
}

func (h *Host) recordSent(function, queue string, m sbemu.Message) {
	e := Event{Kind: Sent, Function: function, Queue: queue, MessageID: m.MessageID}
	if len(m.Body) <= sentBodyLimit {
		e.Body = m.Body
	}
	h.record(e)
}

// Events returns the events so far, oldest first.
func (h *Host) Events() []Event {
	h.journal.mu.Lock()
	defer h.journal.mu.Unlock()
	return append([]Event(nil), h.journal.events...)
}

// Wait returns the first event, past or future, for which match is true,
// or an error when ctx ends first.
func (h *Host) Wait(ctx context.Context, match func(Event) bool) (Event, error) {
	seen := 0
	for {
		h.journal.mu.Lock()
		events, changed := h.journal.events, h.journal.changed
		h.journal.mu.Unlock()
		if seen > len(events) { // trimmed meanwhile
			seen = 0
		}
		for _, e := range events[seen:] {
			if match(e) {
				return e, nil
			}
		}
		seen = len(events)
		select {
		case <-changed:
		case <-ctx.Done():
			return Event{}, fmt.Errorf("wait for a dev host event: %w", ctx.Err())
		}
	}
}

// Finished returns how many invocations of function have finished, either
// outcome, since the host started.
func (h *Host) Finished(function string) int {
	h.journal.mu.Lock()
	defer h.journal.mu.Unlock()
	return h.journal.finished[function]
}

// WaitCount waits until at least n invocations of function have finished
// since the host started, or ctx ends. A test that fires a function reads
// Finished first and waits for one more: once WaitCount returns, whatever
// that invocation did (its outputs, its alerts, its rows) is done, and an
// assertion that nothing more happened holds without a sleep.
func (h *Host) WaitCount(ctx context.Context, function string, n int) error {
	for {
		h.journal.mu.Lock()
		got, changed := h.journal.finished[function], h.journal.changed
		h.journal.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("wait for %d invocations of %s (%d finished): %w", n, function, got, ctx.Err())
		}
	}
}
