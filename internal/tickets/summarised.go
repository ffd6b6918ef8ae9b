package tickets

import (
	"context"
	"sync"
)

// Summarised is the record of what has been summarised already, kept by the
// control plane. Seen returns the [Hash] of the version of ticket id that was
// last summarised or submitted for summary, and ok=false when there is none.
// An error stops the collection: it is infrastructure, not a bad ticket.
//
// The collector calls Seen once per unique valid ticket, in order, from one
// goroutine. A store with a round trip per call (Table Storage) would make
// 50,000 sequential calls for a big day; such a caller passes no Summarised
// and sorts the yielded tickets itself, looking them up many at once (as
// package nightly does). Loading a whole record into a [Memory] is fine
// for tests and small records, not for one that grows with every ticket.
type Summarised interface {
	Seen(ctx context.Context, id string) (hash string, ok bool, err error)
}

// Memory is a Summarised held in memory, safe for concurrent use. The zero
// value is not usable; use NewMemory.
type Memory struct {
	mu     sync.RWMutex
	hashes map[string]string
}

// NewMemory returns an empty record.
func NewMemory() *Memory {
	return &Memory{hashes: make(map[string]string)}
}

// Record notes that the version of ticket id with the given hash has been
// summarised (or submitted), replacing any earlier record.
func (m *Memory) Record(id, hash string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hashes[id] = hash
}

// Seen implements Summarised.
func (m *Memory) Seen(_ context.Context, id string) (string, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	h, ok := m.hashes[id]
	return h, ok, nil
}

// Len returns the number of records.
func (m *Memory) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.hashes)
}
