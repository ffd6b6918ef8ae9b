package nightly

import (
	"context"
	"fmt"

	"github.com/offpath/offpath/internal/tickets"
)

// The sieve's bounds: how many tickets, and how many bytes of them, make a
// batch to look up.
const (
	sieveTickets = 500
	sieveBytes   = 8 << 20
)

// sieve passes on, in order, the tickets never summarised or changed since.
// It cuts them into batches of a few hundred and looks each batch's ids up
// in the summaries record at once, while the next batch is being collected;
// then it drops the tickets whose summarised version is current. One lookup
// per ticket, made one at a time, would cost a night of 50,000 tickets
// minutes of round trips; loading the whole record would cost memory that
// grows with every ticket ever summarised. At most two batches are held.
type sieve struct {
	lookup func(ctx context.Context, ids []string) (map[string]string, error)
	emit   func(tickets.Ticket) error

	pending        []tickets.Ticket
	bytes          int
	inflight       *lookupCall
	New, Unchanged int
}

// lookupCall is one batch being looked up.
type lookupCall struct {
	batch  []tickets.Ticket
	done   chan struct{}
	hashes map[string]string
	err    error
}

func (s *sieve) add(ctx context.Context, t tickets.Ticket) error {
	s.pending = append(s.pending, t)
	s.bytes += len(t.Subject) + len(t.Body) + len(t.Customer)
	if len(s.pending) >= sieveTickets || s.bytes >= sieveBytes {
		return s.cut(ctx)
	}
	return nil
}

// finish passes on every ticket still held.
func (s *sieve) finish(ctx context.Context) error {
	if err := s.cut(ctx); err != nil {
		return err
	}
	return s.cut(ctx)
}

// cut starts looking up the pending batch and passes on the batch before
// it, whose lookup ran while this one was collected.
func (s *sieve) cut(ctx context.Context) error {
	prev := s.inflight
	s.inflight = nil
	if len(s.pending) > 0 {
		c := &lookupCall{batch: s.pending, done: make(chan struct{})}
		ids := make([]string, len(c.batch))
		for i := range c.batch {
			ids[i] = c.batch[i].ID
		}
		go func() {
			defer close(c.done)
			c.hashes, c.err = s.lookup(ctx, ids)
		}()
		s.inflight = c
		s.pending, s.bytes = make([]tickets.Ticket, 0, sieveTickets), 0
	}
	if prev == nil {
		return nil
	}
	return s.pass(prev)
}

// pass waits for a batch's lookup and emits its new and changed tickets.
func (s *sieve) pass(c *lookupCall) error {
	<-c.done
	if c.err != nil {
		return fmt.Errorf("look up %d summaries: %w", len(c.batch), c.err)
	}
	for i := range c.batch {
		t := &c.batch[i]
		if h, ok := c.hashes[t.ID]; ok && h == t.Hash {
			s.Unchanged++
			continue
		}
		s.New++
		if err := s.emit(*t); err != nil {
			return err
		}
	}
	return nil
}
