package ratelimit

import (
	"context"
	"fmt"
	"sync"
)

// DefaultCappedFraction is the part of a deployment's budget a Capped
// limiter takes by default.
const DefaultCappedFraction = 0.25

// Capped paces a secondary user of a Set's deployments (the batch
// deadline fallback) so that it never takes more than Fraction of any
// deployment's limits in any window: each request waits first on a
// limiter of its own, sized to Fraction of the deployment's limits in
// force (the Fleet's share included, read again on every request), then
// on the deployment's own Limiter with everyone else. The primary users
// (document ingestion) thus keep at least 1−Fraction of the budget while
// the secondary one is busy, and all of it otherwise; together they never
// exceed it. A deployment the Set does not limit is not limited here
// either.
type Capped struct {
	set      *Set
	fraction float64
	opts     Options

	mu   sync.Mutex
	caps map[string]*Limiter
}

// NewCapped returns a Capped on set taking at most fraction (0 < f ≤ 1;
// 0 is DefaultCappedFraction) of each deployment's limits.
func NewCapped(set *Set, fraction float64, opts Options) (*Capped, error) {
	if fraction == 0 {
		fraction = DefaultCappedFraction
	}
	if fraction < 0 || fraction > 1 {
		return nil, fmt.Errorf("capped rate limit: fraction %v outside (0, 1]", fraction)
	}
	return &Capped{set: set, fraction: fraction, opts: opts, caps: map[string]*Limiter{}}, nil
}

// Wait waits for room for tokens within the cap, then on the deployment.
func (c *Capped) Wait(ctx context.Context, deployment string, tokens int64) error {
	l := c.set.Limiter(deployment)
	if l == nil {
		return nil
	}
	lc, err := c.cap(deployment, l.Limits())
	if err != nil {
		return err
	}
	if err := lc.Wait(ctx, tokens); err != nil {
		return err
	}
	return l.Wait(ctx, tokens)
}

// Observe passes what an answer said to the deployment's Limiter.
func (c *Capped) Observe(deployment string, sig Signal) { c.set.Observe(deployment, sig) }

// Limits returns the cap in force for deployment (zero if unlimited).
func (c *Capped) Limits(deployment string) Limits {
	l := c.set.Limiter(deployment)
	if l == nil {
		return Limits{}
	}
	return c.part(l.Limits())
}

func (c *Capped) part(lim Limits) Limits {
	f := func(v int64) int64 {
		if v <= 0 {
			return 0
		}
		return max(int64(float64(v)*c.fraction), 1)
	}
	return Limits{TPM: f(lim.TPM), RPM: f(lim.RPM)}
}

// cap returns the deployment's cap limiter, resized to the limits in force.
func (c *Capped) cap(deployment string, lim Limits) (*Limiter, error) {
	want := c.part(lim)
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.caps[deployment]
	if l == nil {
		var err error
		if l, err = New(deployment+"~capped", want, c.opts); err != nil {
			return nil, err
		}
		c.caps[deployment] = l
	} else if l.Limits() != want {
		l.Resize(want)
	}
	return l, nil
}
