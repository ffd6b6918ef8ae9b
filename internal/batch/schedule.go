package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/outcome"
)

// Why a part is on its deployment (Part.Placement).
const (
	// PlaceCheapest: the cheapest deployment the job may use (the only one,
	// for an alias with one).
	PlaceCheapest = "cheapest"
	// PlaceCheaperFull: every cheaper deployment lacked the headroom for
	// the part (offpath's own accounting, or Azure's token_limit_exceeded).
	PlaceCheaperFull = "cheaper_full"
	// PlaceCheaperCoolingOff: a cheaper deployment is cooling off after
	// Azure refused it or failed repeatedly.
	PlaceCheaperCoolingOff = "cheaper_cooling_off"
)

// Decisions counts the scheduler's decisions (package tokenmetrics'
// Prometheus implements it).
type Decisions interface {
	// Placed: a part of alias was submitted to deployment, for reason.
	Placed(alias, deployment, reason string)
	// CooledOff: deployment is skipped for a while, for reason
	// ("token_limit_exceeded" or "errors").
	CooledOff(deployment, reason string)
}

// batchRanks numbers the catalog's batch deployments in the order the
// scheduler prefers them (catalog.BatchRank).
func batchRanks(c *catalog.Catalog) map[string]int {
	var all []catalog.Deployment
	seen := map[string]bool{}
	for _, a := range c.Aliases() {
		for _, d := range a.Batch {
			if !seen[d.Name] {
				seen[d.Name] = true
				all = append(all, d)
			}
		}
	}
	slices.SortFunc(all, catalog.BatchRank)
	out := make(map[string]int, len(all))
	for i, d := range all {
		out[d.Name] = i
	}
	return out
}

// compareRank orders deployment names as the scheduler prefers them; names
// the catalog no longer lists come last.
func (s *Service) compareRank(a, b string) int {
	ra, oka := s.rank[a]
	rb, okb := s.rank[b]
	switch {
	case oka && okb && ra != rb:
		return ra - rb
	case oka != okb:
		if oka {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// coolState is one deployment's cool-off, and its creates that failed in a
// row.
type coolState struct {
	until    time.Time
	reason   string
	failures int
}

// cooling returns until when, and why, deployment is cooling off at now.
func (s *Service) cooling(deployment string, now time.Time) (time.Time, string, bool) {
	s.coolMu.Lock()
	defer s.coolMu.Unlock()
	c := s.cool[deployment]
	return c.until, c.reason, now.Before(c.until)
}

// coolOff starts a cool-off of deployment: for CoolOff, parts that have
// another deployment skip it. It is this instance's: every poller finds a
// deployment's refusals and failures on its own, within a tick.
func (s *Service) coolOff(ctx context.Context, deployment, reason string) {
	now := s.now()
	s.coolMu.Lock()
	c := s.cool[deployment]
	already := now.Before(c.until)
	c.until, c.reason, c.failures = now.Add(s.o.CoolOff), reason, 0
	s.cool[deployment] = c
	s.coolMu.Unlock()
	if already {
		return
	}
	zerolog.Ctx(ctx).Warn().Str("deployment", deployment).Str("reason", reason).Time("until", c.until).
		Msg("batch deployment cooling off: parts that may go elsewhere skip it")
	if s.o.Decisions != nil {
		s.o.Decisions.CooledOff(deployment, reason)
	}
}

// createOutcome counts a create's outcome at deployment towards its
// cool-off: a refusal for quota starts one at once, CoolOffFailures
// failures in a row (5xx, connection; azopenai has retried each already)
// start one, a success clears the count.
func (s *Service) createOutcome(ctx context.Context, deployment string, err error) {
	switch {
	case err == nil:
		s.coolMu.Lock()
		if c, ok := s.cool[deployment]; ok && c.failures > 0 {
			c.failures = 0
			s.cool[deployment] = c
		}
		s.coolMu.Unlock()
	case errors.Is(err, ErrQuotaFull):
		s.coolOff(ctx, deployment, "token_limit_exceeded")
	case errors.Is(err, errCreate) && !errors.Is(err, ErrAzureAuth) && outcome.Of(err) != outcome.Rejected:
		s.coolMu.Lock()
		c := s.cool[deployment]
		c.failures++
		s.cool[deployment] = c
		n := c.failures
		s.coolMu.Unlock()
		if n >= s.o.CoolOffFailures {
			s.coolOff(ctx, deployment, "errors")
		}
	}
}

// errCreate marks an admission's error as the create's (not the upload's,
// which is the resource's, not the deployment's).
var errCreate = errors.New("create failed")

// route returns the deployments a pending part may go to this tick, the
// preferred first: those of its alias in the job's data zone, cheapest
// first, without the ones cooling off unless all are. why says, for the
// first, why cheaper ones were passed over.
func (s *Service) route(j *Job, p *Part, now time.Time) (route []string, reason, why string) {
	alias, ok := s.o.Catalog.Alias(j.Alias)
	var eligible []catalog.Deployment
	if ok {
		eligible = alias.BatchFor(j.DataZone)
	}
	if len(eligible) == 0 {
		// The catalog no longer offers the alias here: the part stays
		// where it was written for.
		return []string{p.Deployment}, PlaceCheapest, ""
	}
	var skipped []string
	for _, d := range eligible {
		if until, r, cool := s.cooling(d.Name, now); cool {
			skipped = append(skipped, fmt.Sprintf("%s cooling off until %s after %s", d.Name, until.Format(time.RFC3339), r))
			continue
		}
		route = append(route, d.Name)
	}
	if len(route) == 0 {
		for _, d := range eligible {
			route = append(route, d.Name)
		}
		return route, PlaceCheapest, "every deployment is cooling off; the cheapest is tried"
	}
	if route[0] != eligible[0].Name {
		return route, PlaceCheaperCoolingOff, strings.Join(skipped, "; ")
	}
	return route, PlaceCheapest, ""
}

// spill moves a candidate passed over on its deployment to the next one
// of its route; false when it has none left.
func (c *candidate) spill(why string) bool {
	if len(c.route) < 2 {
		return false
	}
	c.route = c.route[1:]
	c.reason = PlaceCheaperFull
	c.why = strings.TrimPrefix(c.why+"; "+why, "; ")
	return true
}

// move records on the part that it goes to deployment (claimed for
// admission there): a part written for another deployment is uploaded
// again with this one's name, and its earlier Azure file is deleted unless
// a create may still be using it.
func move(j *Job, p *Part, deployment string, createMayBePending bool) {
	if p.Deployment == deployment {
		return
	}
	if p.WrittenFor == "" {
		p.WrittenFor = p.Deployment
	}
	if p.WrittenFor == deployment {
		p.WrittenFor = ""
	}
	if p.InputFileID != "" {
		if !createMayBePending {
			j.Cleanup = append(j.Cleanup, p.InputFileID)
		}
		p.InputFileID = ""
	}
	// The backoff and the limit Azure reported were the other deployment's.
	p.Deployment, p.NextAttemptAt, p.MaybeCreated, p.MaxEnqueuedTokens = deployment, time.Time{}, false, 0
}

// uploadName is the Azure file name of the part's input: {job}.part{N}.jsonl
// as written, {job}.part{N}.{deployment}.jsonl once moved to another
// deployment (a lookup of an earlier upload must not find the other
// deployment's file).
func uploadName(jobID string, p *Part) string {
	if p.WrittenFor != "" && p.WrittenFor != p.Deployment {
		return fmt.Sprintf("%s.part%d.%s.jsonl", jobID, p.Index, p.Deployment)
	}
	return fmt.Sprintf("%s.part%d.jsonl", jobID, p.Index)
}

// uploadBytes is the size of the part's input as uploaded to its
// deployment: each line's body.model names it.
func (p *Part) uploadBytes() int64 {
	if p.WrittenFor == "" || p.WrittenFor == p.Deployment {
		return p.Bytes
	}
	return p.Bytes + int64(p.Lines)*int64(len(p.Deployment)-len(p.WrittenFor))
}
