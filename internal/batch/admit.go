package batch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batchapi"
	"github.com/offpath/offpath/internal/outcome"
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
}

func (c candidate) p() *Part { return &c.job.Parts[c.part] }

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

// admit submits pending parts while their deployments have room, fairly:
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
			case p.Status == PartPending && !j.CancelRequested && !j.leasedByOther(t.owner, now):
				d.queues[j.Tenant] = append(d.queues[j.Tenant], candidate{job: j, part: i})
			}
		}
	}
	names := make([]string, 0, len(deps))
	for n, d := range deps {
		if len(d.queues) > 0 {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	held := map[*Job][]int{}
	var mu sync.Mutex
	for _, n := range names {
		d := deps[n]
		for tn := range d.queues {
			slices.SortFunc(d.queues[tn], func(a, b candidate) int {
				return cmp.Or(a.job.Created.Compare(b.job.Created), cmp.Compare(a.job.ID, b.job.ID), cmp.Compare(a.part, b.part))
			})
		}
		for _, c := range s.admitDeployment(ctx, t, d, now) {
			mu.Lock()
			held[c.job] = append(held[c.job], c.part)
			mu.Unlock()
		}
	}
	for j, parts := range held {
		s.markHeld(ctx, j, parts)
	}
}

// admitDeployment admits parts on one deployment in waves of at most
// AdmitConcurrency, and returns the candidates left waiting for capacity.
func (s *Service) admitDeployment(ctx context.Context, t *tick, d *deployment, now time.Time) []candidate {
	full := false
	waiting := func() []candidate {
		var out []candidate
		for _, q := range d.queues {
			for _, c := range q {
				if p := c.p(); !p.NextAttemptAt.After(now) && (full || d.quota > 0 && d.inflight+p.EstimatedTokens > d.quota) {
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
			if p.NextAttemptAt.After(now) { // backing off: its successors wait too
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
			return waiting()
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
			switch {
			case err == nil:
				t.count(func(r *TickReport) { r.Admitted++ })
			case errors.Is(err, batchapi.ErrQuotaFull):
				t.count(func(r *TickReport) { r.Refused++ })
				full = true
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
			return waiting()
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

// admitPart uploads a part's input (once) and creates its Azure batch,
// under the job's lease. It returns batchapi.ErrQuotaFull when Azure
// refuses for quota, nil when the batch exists.
func (s *Service) admitPart(ctx context.Context, t *tick, c candidate) error {
	log := zerolog.Ctx(ctx).With().Str("job", c.job.ID).Str("tenant", c.job.Tenant).Int("part", c.part).Logger()
	ctx = log.WithContext(ctx)
	i := c.part
	maybe := false
	j, err := s.update(ctx, *c.job, func(j *Job) error {
		now := s.now()
		p := &j.Parts[i]
		if j.leasedByOther(t.owner, now) {
			return errLeaseLost
		}
		if p.Status != PartPending || j.CancelRequested {
			return errSkipAdmit
		}
		maybe = p.MaybeCreated
		p.MaybeCreated = true // a create may be under way from here on
		j.Lease = Lease{Owner: t.owner, Until: now.Add(s.o.LeaseTTL)}
		return nil
	})
	if err != nil {
		if errors.Is(err, errSkipAdmit) || errors.Is(err, errLeaseLost) {
			return err
		}
		return fmt.Errorf("claim: %w", err)
	}
	p := j.Parts[i]
	fileID := p.InputFileID
	var created batchapi.Created
	if fileID == "" {
		fileID, err = s.upload(ctx, &j, &p)
	}
	createCalled := err == nil
	if createCalled {
		created, err = s.o.Azure.CreateBatch(ctx, batchapi.Submission{InputFileID: fileID, JobID: j.ID, Part: p.Index,
			Attempt: p.Attempt, MaybeCreated: maybe, Metadata: map[string]string{"tenant": j.Tenant, "alias": j.Alias}})
	}
	var events []partEvent
	stored, uerr := s.update(ctx, j, func(j *Job) error {
		events = events[:0]
		if j.Lease.Owner != t.owner && j.leasedByOther(t.owner, s.now()) {
			return errLeaseLost
		}
		j.Lease = Lease{}
		q := &j.Parts[i]
		if q.Status != PartPending {
			if err == nil && q.Status == PartDone && q.BatchID == "" {
				// Cancelled while the batch was being created: record it
				// as submitted, so that the next tick cancels it at Azure
				// and harvests what it did. It must not be lost.
				q.Status, q.AzureStatus, q.FinishedAt = PartSubmitted, created.Batch.Status, time.Time{}
				q.BatchID, q.InputFileID, q.SubmittedAt, q.MaybeCreated = created.Batch.ID, fileID, s.now(), false
			}
			return nil
		}
		q.InputFileID = fileID
		if !createCalled {
			q.MaybeCreated = maybe
		}
		if ev := s.applyCreate(q, created, err); ev != "" {
			events = append(events, partEvent{i, ev})
		}
		return nil
	})
	if uerr != nil {
		log.Error().Err(uerr).Str("batch_id", created.Batch.ID).Msg("admission not recorded; the next tick finds the batch by its metadata")
	} else {
		s.announce(ctx, &stored, events)
	}
	if err != nil {
		if errors.Is(err, batchapi.ErrAuth) {
			s.authAlert(ctx, t, err)
		}
		log.Warn().Err(err).Msg("part not admitted")
		return err
	}
	log.Info().Str("batch_id", created.Batch.ID).Str("deployment", p.Deployment).Int64("estimated_tokens", p.EstimatedTokens).
		Bool("recovered", created.Recovered).Msg("batch part submitted")
	return uerr
}

var errSkipAdmit = errors.New("part no longer pending")

// upload sends the part's stored input to Azure and waits until the file
// is processed.
func (s *Service) upload(ctx context.Context, j *Job, p *Part) (string, error) {
	body, _, err := s.o.Blobs.Open(ctx, s.o.Containers.Inputs, p.InputBlob)
	if err != nil {
		return "", fmt.Errorf("open input: %w", err)
	}
	defer body.Close()
	f, err := s.o.Azure.UploadFile(ctx, fmt.Sprintf("%s.part%d.jsonl", j.ID, p.Index), body, p.Bytes)
	if err != nil {
		return "", err
	}
	if f, err = s.o.Azure.AwaitFile(ctx, f.ID, time.Second); err != nil {
		return "", err
	}
	return f.ID, nil
}

// applyCreate records the outcome of an admission attempt on the part.
func (s *Service) applyCreate(p *Part, c batchapi.Created, err error) string {
	now := s.now()
	var qe *batchapi.QuotaError
	switch {
	case err == nil:
		b := c.Batch
		p.Status, p.BatchID, p.SubmittedAt, p.PolledAt = PartSubmitted, b.ID, now, now
		p.AzureStatus, p.AzureExpiry, p.MaybeCreated, p.NextAttemptAt = b.Status, b.ExpiresAt, false, time.Time{}
		if c.MaxEnqueuedTokens > 0 {
			p.MaxEnqueuedTokens = c.MaxEnqueuedTokens
		}
		if b.Status.Terminal() {
			return s.applyBatch(p, b)
		}
	case errors.As(err, &qe):
		if qe.MaxEnqueuedTokens > 0 {
			p.MaxEnqueuedTokens = qe.MaxEnqueuedTokens
		}
		p.BatchID = ""
		s.requeue(p, "token_limit_exceeded")
		p.Attempt-- // nothing was created: the same attempt may be used again
	case errors.Is(err, batchapi.ErrAmbiguous):
		p.HeldReason, p.NextAttemptAt = "retry", now.Add(s.backoff(1))
	case errors.Is(err, batchapi.ErrNotFound):
		// The input file expired or was deleted: upload it again.
		p.InputFileID, p.MaybeCreated = "", false
		p.HeldReason, p.NextAttemptAt = "retry", now.Add(s.backoff(1))
	case outcome.Of(err) == outcome.Rejected:
		p.MaybeCreated = false
		p.Status, p.AzureStatus, p.FinishedAt = PartDone, batchapi.StatusFailed, now
		p.Errors = []batchapi.BatchError{{Code: "create_rejected", Message: clipMessage(err.Error())}}
		return AlertFailed
	default:
		p.HeldReason, p.NextAttemptAt = "retry", now.Add(s.backoff(p.Refusals+1))
	}
	if p.HeldSince.IsZero() && p.Status == PartPending {
		p.HeldSince = now
	}
	return ""
}
