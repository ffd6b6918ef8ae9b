package tickets

import "context"

// Summarised is the record of what has been summarised already, kept by the
// control plane. Seen returns the [Hash] of the version of ticket id that was
// last summarised or submitted for summary, and ok=false when there is none.
// An error stops the collection: it is infrastructure, not a bad ticket.
//
// The collector calls Seen once per unique valid ticket, in order, from one
// goroutine. A store with a round trip per call (Table Storage) would make
// 50,000 sequential calls for a big day; such a caller passes no Summarised
// and sorts the yielded tickets itself, looking them up many at once (as
// package nightly does).
type Summarised interface {
	Seen(ctx context.Context, id string) (hash string, ok bool, err error)
}
