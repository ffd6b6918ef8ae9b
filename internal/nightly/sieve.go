package nightly

import (
	"context"
	"fmt"

	"github.com/offpath/offpath/internal/tickets"
)

// The sieve's bounds: how many tickets, and how many bytes of them, it holds
// before it looks them up.
const (
	sieveTickets = 500
	sieveBytes   = 8 << 20
)

// sieve passes on, in order, the tickets never summarised or changed since:
// it holds a few hundred, looks their ids up in the summaries record at
// once, and drops those whose summarised version is current. One lookup per
// ticket, made one at a time, would cost a night of 50,000 tickets minutes
// of round trips; loading the whole record would cost memory that grows
// with every ticket ever summarised.
type sieve struct {
	lookup func(ctx context.Context, ids []string) (map[string]string, error)
	emit   func(tickets.Ticket) error

	pending        []tickets.Ticket
	bytes          int
	New, Unchanged int
}

func (s *sieve) add(ctx context.Context, t tickets.Ticket) error {
	s.pending = append(s.pending, t)
	s.bytes += len(t.Subject) + len(t.Body) + len(t.Customer)
	if len(s.pending) >= sieveTickets || s.bytes >= sieveBytes {
		return s.flush(ctx)
	}
	return nil
}

func (s *sieve) flush(ctx context.Context) error {
	if len(s.pending) == 0 {
		return nil
	}
	ids := make([]string, len(s.pending))
	for i := range s.pending {
		ids[i] = s.pending[i].ID
	}
	hashes, err := s.lookup(ctx, ids)
	if err != nil {
		return fmt.Errorf("look up %d summaries: %w", len(ids), err)
	}
	for i := range s.pending {
		t := &s.pending[i]
		if h, ok := hashes[t.ID]; ok && h == t.Hash {
			s.Unchanged++
			continue
		}
		s.New++
		if err := s.emit(*t); err != nil {
			return err
		}
	}
	clear(s.pending) // drop the bodies
	s.pending, s.bytes = s.pending[:0], 0
	return nil
}
