// Package alerttest records raised alerts, for tests of the packages that
// raise them.
package alerttest

import (
	"context"
	"slices"
	"sync"

	"github.com/offpath/offpath/internal/alert"
)

// Recorder is an alerter that logs each alert, as package alert does, and
// keeps it. The zero value is ready; it is safe for concurrent use.
type Recorder struct {
	mu  sync.Mutex
	got []alert.Alert
}

// Raise logs a and keeps it.
func (r *Recorder) Raise(ctx context.Context, a alert.Alert) {
	alert.Log(ctx, a)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, a)
}

// All returns the alerts raised so far, in order.
func (r *Recorder) All() []alert.Alert {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// Named returns the alerts named name, in order.
func (r *Recorder) Named(name string) []alert.Alert {
	var out []alert.Alert
	for _, a := range r.All() {
		if a.Name == name {
			out = append(out, a)
		}
	}
	return out
}

// Names returns the names of the alerts raised so far, in order.
func (r *Recorder) Names() []string {
	var out []string
	for _, a := range r.All() {
		out = append(out, a.Name)
	}
	return out
}

// Count returns how many alerts named name were raised.
func (r *Recorder) Count(name string) int { return len(r.Named(name)) }
