package ratelimit

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"time"
)

// ErrConflict is what a LeaseStore answers when the pool changed since it
// was loaded.
var ErrConflict = errors.New("rate lease pool changed concurrently")

// LeaseStore keeps each deployment's Pool, shared by every process that
// calls the deployment (package tablestore: one Table Storage row each).
type LeaseStore interface {
	// Load returns the deployment's pool and its version; an empty pool
	// and "" when there is none yet.
	Load(ctx context.Context, deployment string) (Pool, string, error)
	// Save writes the pool if its version is still version ("": if there
	// is none), ErrConflict otherwise, and returns the new version.
	Save(ctx context.Context, deployment string, pool Pool, version string) (string, error)
}

// Pool is how one deployment's quota is shared: who holds which part of
// it until when, and what was given back but may not be used yet because
// requests counted against it are still inside the window.
type Pool struct {
	Members map[string]Lease `json:"members,omitempty"`
	Cooling []Step           `json:"cooling,omitempty"`
}

// Lease is one process's part of the quota.
type Lease struct {
	TPM int64 `json:"tpm"`
	RPM int64 `json:"rpm"`
	// Want is the fraction of the quota the process would use now (its
	// window and its queue), which the fair split is computed from.
	Want float64 `json:"want"`
	// Expires ends the lease: the holder stops using it then, unless it
	// renewed it, and the others may reuse it a window later.
	Expires time.Time `json:"expires"`
}

// tidy ends the leases expired at now, their parts cooling until reuse
// after their end, and drops cooling that has ended.
func (p *Pool) tidy(now time.Time, reuse time.Duration) {
	for id, m := range p.Members {
		if !m.Expires.After(now) {
			p.cool(Step{At: m.Expires.Add(reuse), TPM: m.TPM, RPM: m.RPM})
			delete(p.Members, id)
		}
	}
	p.Cooling = slices.DeleteFunc(p.Cooling, func(s Step) bool { return !s.At.After(now) })
}

// cool adds s to the cooling parts, rounded up to the whole second so
// that the list stays short (one entry per second of the window at most).
func (p *Pool) cool(s Step) {
	if s.TPM <= 0 && s.RPM <= 0 {
		return
	}
	if r := s.At.Truncate(time.Second); r.Before(s.At) {
		s.At = r.Add(time.Second)
	}
	i, found := slices.BinarySearchFunc(p.Cooling, s.At, func(c Step, at time.Time) int { return c.At.Compare(at) })
	if found {
		p.Cooling[i].TPM += s.TPM
		p.Cooling[i].RPM += s.RPM
		return
	}
	p.Cooling = slices.Insert(p.Cooling, i, s)
}

// held is what the pool gives out or keeps cooling, but for member id.
func (p *Pool) held(id string) Limits {
	var h Limits
	for other, m := range p.Members {
		if other != id {
			h.TPM += m.TPM
			h.RPM += m.RPM
		}
	}
	for _, c := range p.Cooling {
		h.TPM += c.TPM
		h.RPM += c.RPM
	}
	return h
}

// fairShares splits the whole (1) among the members by what they want,
// max-min fair: nobody gets more than it wants while another that wants
// more gets less than an equal part; what nobody wants is split equally,
// as headroom.
func fairShares(wants map[string]float64) map[string]float64 {
	ids := slices.SortedFunc(maps.Keys(wants), func(a, b string) int {
		return cmp.Or(cmp.Compare(wants[a], wants[b]), cmp.Compare(a, b))
	})
	shares := make(map[string]float64, len(ids))
	left := 1.0
	for i, id := range ids {
		s := min(max(wants[id], 0), left/float64(len(ids)-i))
		shares[id] = s
		left -= s
	}
	if left > 0 && len(ids) > 0 {
		for _, id := range ids {
			shares[id] += left / float64(len(ids))
		}
	}
	return shares
}

// want is the fraction of quota a limiter's usage asks for: what its
// window and its queue hold, the larger of tokens and requests, with a
// quarter more as headroom, and at least minWant.
func want(u Usage, quota Limits) float64 {
	frac := func(n, of int64) float64 {
		if of <= 0 {
			return 0
		}
		return float64(n) / float64(of)
	}
	w := max(frac(u.Tokens+u.QueuedTokens, quota.TPM), frac(u.Requests+u.QueuedRequests, quota.RPM))
	return math.Round(max(w*1.25, minWant)*1e4) / 1e4
}

// minWant is what an idle process asks for: room for a first request.
const minWant = 0.01

// part is frac of quota, rounded down.
func part(quota Limits, frac float64) Limits {
	return Limits{TPM: int64(math.Floor(frac * float64(quota.TPM))), RPM: int64(math.Floor(frac * float64(quota.RPM)))}
}
