package batch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// backoff is the wait after the n-th refusal of a part: BackoffBase ×
// 2^(n−1), at most BackoffMax, drawn uniformly from its upper half so that
// parts refused together do not come back together.
func (s *Service) backoff(n int) time.Duration {
	d := s.o.BackoffMax
	if n >= 1 && n < 30 {
		if e := s.o.BackoffBase << (n - 1); e > 0 && e < d {
			d = e
		}
	}
	return d/2 + rand.N(d/2+1)
}

// candidate is a pending part that might be admitted.
type candidate struct {
	job  *Job
	part int
	// route are the deployments the part may still go to this tick, the
	// preferred first; it is queued on route[0]. reason and why say why
	// it is there (Part.Placement, Part.PlacementDetail).
	route       []string
	reason, why string
}

func (c candidate) p() *Part { return &c.job.Parts[c.part] }

// target is the deployment the candidate is queued on.
func (c candidate) target() string { return c.route[0] }

// notBefore is when the candidate may be tried on its target: its backoff
// is its own deployment's, and does not hold it back elsewhere.
func (c candidate) notBefore() time.Time {
	if c.target() != c.p().Deployment {
		return time.Time{}
	}
	return c.p().NextAttemptAt
}

// since is how long the candidate has waited: since it was first held, or
// since the job was created.
func (c candidate) since() time.Time {
	if h := c.p().HeldSince; !h.IsZero() {
		return h
	}
	return c.job.Created
}

// deployment is one deployment's admission state during a tick.
type deployment struct {
	name     string
	quota    int64 // 0: unknown, Azure decides
	inflight int64
	tenants  map[string]int64     // in-flight tokens per tenant
	last     map[string]time.Time // each tenant's latest admission seen
	queues   map[string][]candidate
}

// admit places pending parts and submits them while their deployments
// have room. Each part is queued on the cheapest deployment it may use (its
// alias's, in its job's data zone, not cooling off); deployments are worked
// through cheapest first, and a part that does not fit one, or that Azure
// refuses there, moves on to the next of its deployments in the same tick.
// On each deployment admission is fair:
// per deployment, the next part always comes from the tenant with the
// fewest tokens in flight there (ties: the tenant admitted least recently,
// then the longest-waiting head), oldest job and lowest part first within
// a tenant. A tenant whose head does not
// fit is passed over for the tick, so a small job is not stuck behind
// another tenant's huge one; but a head held longer than AgeLimit reserves
// the deployment (nothing else is admitted there until it fits), so a huge
// job is not starved by a stream of small ones either. Azure's own refusal
// closes the deployment for the rest of the tick.
func (s *Service) admit(ctx context.Context, t *tick, jobs []*Job) {
	now := s.now()
	deps := map[string]*deployment{}
	get := func(name string) *deployment {
		d := deps[name]
		if d == nil {
			d = &deployment{name: name, quota: s.o.Quota[name], tenants: map[string]int64{},
				last: map[string]time.Time{}, queues: map[string][]candidate{}}
			deps[name] = d
		}
		return d
	}
	for _, j := range jobs {
		for i := range j.Parts {
			p := &j.Parts[i]
			d := get(p.Deployment)
			if p.MaxEnqueuedTokens > 0 && (d.quota == 0 || p.MaxEnqueuedTokens < d.quota) {
				d.quota = p.MaxEnqueuedTokens
			}
			if p.SubmittedAt.After(d.last[j.Tenant]) {
				d.last[j.Tenant] = p.SubmittedAt
			}
			switch {
			case p.Status == PartSubmitted && !p.azureTerminal():
				d.inflight += p.EstimatedTokens
				d.tenants[j.Tenant] += p.EstimatedTokens
			case p.Status == PartPending && !j.CancelRequested && !j.leasedByOther(t.owner, now) && !s.heldForPack(j, p, now):
				route, reason, why := s.route(j, p, now)
				c := candidate{job: j, part: i, route: route, reason: reason, why: why}
				q := get(c.target())
				q.queues[j.Tenant] = append(q.queues[j.Tenant], c)
			}
		}
	}
	// Every deployment a part may spill to, cheapest first: spilled parts
	// are queued on deployments not yet worked through.
	names := slices.Collect(maps.Keys(s.rank))
	for n := range deps {
		if _, ok := s.rank[n]; !ok {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, s.compareRank)
	held := map[*Job][]int{}
	for _, n := range names {
		d := deps[n]
		if d == nil || len(d.queues) == 0 {
			continue
		}
		for tn := range d.queues {
			slices.SortFunc(d.queues[tn], func(a, b candidate) int {
				return cmp.Or(a.job.Created.Compare(b.job.Created), cmp.Compare(a.job.ID, b.job.ID), cmp.Compare(a.part, b.part))
			})
		}
		waiting, refused := s.admitDeployment(ctx, t, d, now)
		for _, c := range refused {
			if c.spill(d.name + " answered token_limit_exceeded") {
				q := get(c.target())
				q.queues[c.job.Tenant] = append(q.queues[c.job.Tenant], c)
			}
		}
		for _, c := range waiting {
			why := fmt.Sprintf("%s had no headroom for the part's %d estimated tokens", d.name, c.p().EstimatedTokens)
			if d.quota > 0 {
				why = fmt.Sprintf("%s had no headroom: %d of %d enqueued tokens in use, the part needs %d", d.name, d.inflight, d.quota, c.p().EstimatedTokens)
			}
			if c.spill(why) {
				q := get(c.target())
				q.queues[c.job.Tenant] = append(q.queues[c.job.Tenant], c)
				continue
			}
			held[c.job] = append(held[c.job], c.part)
		}
	}
	for j, parts := range held {
		s.markHeld(ctx, j, parts)
	}
}

// admitDeployment admits parts on one deployment in waves of at most
// AdmitConcurrency, and returns the candidates left waiting for capacity
// and those Azure refused for quota.
func (s *Service) admitDeployment(ctx context.Context, t *tick, d *deployment, now time.Time) (waitingFor, refused []candidate) {
	full := false
	waiting := func() []candidate {
		var out []candidate
		for _, q := range d.queues {
			for _, c := range q {
				if p := c.p(); !c.notBefore().After(now) && (full || d.quota > 0 && d.inflight+p.EstimatedTokens > d.quota) {
					out = append(out, c)
				}
			}
		}
		return out
	}
	blocked := map[string]bool{}
	for {
		var wave []candidate
		reserved := false
		for !reserved && len(wave) < s.o.AdmitConcurrency {
			if t.rep.Admitted+len(wave) >= s.o.MaxAdmitPerTick || ctx.Err() != nil {
				break
			}
			tn, ok := s.nextTenant(d, blocked)
			if !ok {
				break
			}
			c := d.queues[tn][0]
			p := c.p()
			if c.notBefore().After(now) { // backing off: its successors wait too
				blocked[tn] = true
				continue
			}
			if d.quota > 0 && d.inflight+p.EstimatedTokens > d.quota {
				blocked[tn] = true
				if now.Sub(c.since()) > s.o.AgeLimit {
					// A head held this long reserves what is freed next:
					// nothing more is admitted here this tick.
					reserved = true
				}
				continue
			}
			d.queues[tn] = d.queues[tn][1:]
			d.inflight += p.EstimatedTokens
			d.tenants[tn] += p.EstimatedTokens
			d.last[tn] = now
			wave = append(wave, c)
		}
		if len(wave) == 0 {
			full = full || reserved
			return waiting(), refused
		}
		results := make([]error, len(wave))
		var wg sync.WaitGroup
		for k, c := range wave {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[k] = s.admitPart(ctx, t, c)
			}()
		}
		wg.Wait()
		for k, err := range results {
			c := wave[k]
			if !errors.Is(err, errSkipAdmit) && !errors.Is(err, errLeaseLost) {
				s.createOutcome(ctx, d.name, err)
			}
			switch {
			case err == nil:
				t.count(func(r *TickReport) { r.Admitted++ })
			case errors.Is(err, ErrQuotaFull):
				t.count(func(r *TickReport) { r.Refused++ })
				full = true
				refused = append(refused, c)
				fallthrough
			default:
				d.inflight -= c.p().EstimatedTokens
				d.tenants[c.job.Tenant] -= c.p().EstimatedTokens
				blocked[c.job.Tenant] = true
			}
		}
		if full || reserved {
			// Azure says the deployment is full, or an aged head reserves
			// it: try again next tick.
			full = true
			return waiting(), refused
		}
	}
}

// nextTenant picks, among unblocked tenants with a queue, the one with the
// fewest tokens in flight; then the one admitted least recently (so that
// tenants take turns as capacity frees up); then the longest-waiting head;
// then by id.
func (s *Service) nextTenant(d *deployment, blocked map[string]bool) (string, bool) {
	best := ""
	for tn, q := range d.queues {
		if blocked[tn] || len(q) == 0 {
			continue
		}
		if best == "" {
			best = tn
			continue
		}
		b := d.queues[best][0]
		if cmp.Or(cmp.Compare(d.tenants[tn], d.tenants[best]), d.last[tn].Compare(d.last[best]),
			q[0].since().Compare(b.since()), cmp.Compare(tn, best)) < 0 {
			best = tn
		}
	}
	return best, best != ""
}

// markHeld records that parts wait for quota offpath accounts for.
func (s *Service) markHeld(ctx context.Context, j *Job, parts []int) {
	_, err := s.update(ctx, *j, func(j *Job) error {
		changed := false
		for _, i := range parts {
			p := &j.Parts[i]
			if p.Status != PartPending || p.HeldReason == "quota" {
				continue
			}
			p.HeldReason = "quota"
			if p.HeldSince.IsZero() {
				p.HeldSince = s.now()
			}
			changed = true
		}
		if !changed {
			return errSkip
		}
		return nil
	})
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("job", j.ID).Msg("held state not recorded")
	}
}
