package nightly

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/tickets"
)

// TestSieve passes on the new and changed tickets of several batches, in
// order, and stops at a failed lookup.
func TestSieve(t *testing.T) {
	recorded := map[string]string{}
	var in []tickets.Ticket
	for i := range 1234 {
		tk := tickets.Ticket{ID: fmt.Sprintf("T-%d", i), Hash: fmt.Sprintf("h%d", i)}
		switch i % 3 {
		case 0:
			recorded[tk.ID] = tk.Hash // unchanged
		case 1:
			recorded[tk.ID] = "older" // changed
		}
		in = append(in, tk)
	}
	var out []string
	var lookups int
	sv := &sieve{
		lookup: func(_ context.Context, ids []string) (map[string]string, error) {
			lookups++
			m := map[string]string{}
			for _, id := range ids {
				if h, ok := recorded[id]; ok {
					m[id] = h
				}
			}
			return m, nil
		},
		emit: func(t tickets.Ticket) error { out = append(out, t.ID); return nil },
	}
	ctx := context.Background()
	for _, tk := range in {
		if err := sv.add(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	if err := sv.flush(ctx); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i, tk := range in {
		if i%3 != 0 {
			want = append(want, tk.ID)
		}
	}
	if !slices.Equal(out, want) || sv.New != len(want) || sv.Unchanged != 1234-len(want) || lookups != 3 {
		t.Fatalf("passed %d (new %d, unchanged %d) in %d lookups; want %d in order, in 3 lookups", len(out), sv.New, sv.Unchanged, lookups, len(want))
	}

	failing := &sieve{
		lookup: func(context.Context, []string) (map[string]string, error) { return nil, errors.New("storage down") },
		emit:   func(tickets.Ticket) error { t.Fatal("emitted after a failed lookup"); return nil },
	}
	var err error
	for _, tk := range in[:sieveTickets+1] {
		if err = failing.add(ctx, tk); err != nil {
			break
		}
	}
	if err == nil {
		err = failing.flush(ctx)
	}
	if err == nil || !strings.Contains(err.Error(), "storage down") {
		t.Fatalf("a failed lookup gave %v", err)
	}
}
