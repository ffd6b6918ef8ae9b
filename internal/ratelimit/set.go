package ratelimit

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// Set holds one Limiter per deployment. It is built once per process, is
// immutable, and is shared by every invocation.
type Set struct {
	limiters map[string]*Limiter
}

// NewSet builds a Limiter for each deployment in limits (already divided
// per instance, see PerInstance).
func NewSet(limits map[string]Limits, opts Options) (*Set, error) {
	s := &Set{limiters: make(map[string]*Limiter, len(limits))}
	for _, name := range slices.Sorted(maps.Keys(limits)) {
		l, err := New(name, limits[name], opts)
		if err != nil {
			return nil, fmt.Errorf("rate limits: %w", err)
		}
		s.limiters[name] = l
	}
	return s, nil
}

// Limiter returns the deployment's Limiter, or nil if it has no limits.
func (s *Set) Limiter(deployment string) *Limiter { return s.limiters[deployment] }

// Wait waits for room for a request of tokens on deployment (see
// Limiter.Wait). A deployment without limits is never waited for.
func (s *Set) Wait(ctx context.Context, deployment string, tokens int64) error {
	if l := s.limiters[deployment]; l != nil {
		return l.Wait(ctx, tokens)
	}
	return nil
}

// Observe passes what an answer of deployment's said to its Limiter (see
// Limiter.Observe).
func (s *Set) Observe(deployment string, sig Signal) {
	if l := s.limiters[deployment]; l != nil {
		l.Observe(sig)
	}
}
