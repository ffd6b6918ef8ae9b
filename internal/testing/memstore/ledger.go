package memstore

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/offpath/offpath/internal/ledger"
)

// Ledger is an in-memory ledger, as tablestore's Ledger behaves: one row
// per tenant, month and unit (Entry.Key), replaced by a later write of the
// same unit and stamped with the time it was written; a month's entries
// come back in row key order and its totals count every row, abandoned
// attempts too.
type Ledger struct {
	now func() time.Time

	mu   sync.Mutex
	rows map[partition]map[string]ledger.Entry // by Entry.Key
}

type partition struct {
	tenant string
	month  ledger.Month
}

// NewLedger returns an empty ledger; now stamps entries' Recorded time
// (nil: time.Now).
func NewLedger(now func() time.Time) *Ledger {
	if now == nil {
		now = time.Now
	}
	return &Ledger{now: now, rows: map[partition]map[string]ledger.Entry{}}
}

// Record writes one entry, replacing the row of the same unit if there is
// one.
func (l *Ledger) Record(_ context.Context, e ledger.Entry) error {
	if err := e.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.put(e)
	return nil
}

func (l *Ledger) put(e ledger.Entry) {
	p := partition{e.Tenant, e.Month}
	if l.rows[p] == nil {
		l.rows[p] = map[string]ledger.Entry{}
	}
	e.Recorded = l.now().UTC()
	l.rows[p][e.Key()] = e
}

// RecordBatch writes many entries; entries of the same unit collapse to
// the last. An invalid entry fails the call and writes none of them.
func (l *Ledger) RecordBatch(_ context.Context, entries []ledger.Entry) error {
	if err := ledger.ValidateAll(entries); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range entries {
		l.put(e)
	}
	return nil
}

// Abandon marks the rows of entries (found by their keys) as spent by
// attempts that did not finish, their usage and time unchanged; a row
// that does not exist is skipped.
func (l *Ledger) Abandon(_ context.Context, entries []ledger.Entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range entries {
		rows := l.rows[partition{e.Tenant, e.Month}]
		prev, ok := rows[e.Key()]
		if !ok || prev.Unfinished {
			continue
		}
		prev.Unfinished = true // its usage and Recorded stay
		rows[e.Key()] = prev
	}
	return nil
}

// Month returns every entry of a tenant's month, in row key order.
func (l *Ledger) Month(_ context.Context, tenantID string, m ledger.Month) ([]ledger.Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rows := l.rows[partition{tenantID, m}]
	out := []ledger.Entry{}
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		out = append(out, rows[k])
	}
	return out, nil
}

// Totals sums a tenant's month.
func (l *Ledger) Totals(ctx context.Context, tenantID string, m ledger.Month) (ledger.Usage, error) {
	entries, err := l.Month(ctx, tenantID, m)
	if err != nil {
		return ledger.Usage{}, err
	}
	return ledger.Summarize(tenantID, m, entries).Total, nil
}

// Entries returns every row, by tenant, month and row key.
func (l *Ledger) Entries() []ledger.Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	parts := slices.SortedFunc(maps.Keys(l.rows), func(a, b partition) int {
		if a.tenant != b.tenant {
			return strings.Compare(a.tenant, b.tenant)
		}
		return strings.Compare(a.month.String(), b.month.String())
	})
	var out []ledger.Entry
	for _, p := range parts {
		for _, k := range slices.Sorted(maps.Keys(l.rows[p])) {
			out = append(out, l.rows[p][k])
		}
	}
	return out
}
