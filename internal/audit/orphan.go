package audit

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/offpath/offpath/internal/batch"
)

// AlertOrphan is raised for a batch that carries offpath's submission key
// but that no job claims: its job row was lost, or moved on without it.
const AlertOrphan = "batch_orphaned"

// Jobs reads offpath's batch jobs (package tablestore's Jobs).
type Jobs interface {
	Get(ctx context.Context, tenantID, id string) (batch.Job, error)
	// Owners returns the tenant of each of ids that names a job (an id
	// two tenants hold is left out): an orphaned pack's lines name their
	// jobs, not their tenants.
	Owners(ctx context.Context, ids []string) (map[string]string, error)
}

// claim says whose a batch carrying offpath's submission key is.
type claim int

const (
	// claimed: the job's part names the batch, or will: its current
	// attempt is the batch's (or an earlier one) and it has not recorded
	// another batch for it, so the poller adopts it by its key.
	claimed claim = iota
	// orphaned: no job row, no such part, or a part that has moved past
	// the batch (harvested, a later attempt, another batch for the same
	// attempt). Nobody will harvest it: the audit books it.
	orphaned
)

// whose decides whether offpath's job claims b, reading each job once per
// run. The job's tenant is the batch's "tenant" metadata, else the active
// index's.
func (a *Auditor) whose(ctx context.Context, r *run, b batch.AzureBatch) (claim, error) {
	id, part, attempt, _ := b.Submission()
	j, err := r.job(ctx, a.o.Jobs, id, cmp.Or(b.Metadata["tenant"], r.inv.active[id]))
	if errors.Is(err, batch.ErrNotFound) {
		return orphaned, nil
	}
	if err != nil {
		return claimed, err
	}
	if part < 0 || part >= len(j.Parts) {
		return orphaned, nil
	}
	p := j.Parts[part]
	switch {
	case p.BatchID == b.ID || slices.Contains(p.PreviousBatchIDs, b.ID):
		return claimed, nil
	case p.Status == batch.PartHarvested, p.Attempt > attempt, p.Attempt == attempt && p.BatchID != "":
		return orphaned, nil
	default:
		return claimed, nil
	}
}

// job reads a job once per run; a job without a known tenant is not found.
func (r *run) job(ctx context.Context, jobs Jobs, id, tenantID string) (batch.Job, error) {
	if j, ok := r.jobs[id]; ok {
		return j, nil
	}
	if tenantID == "" {
		return batch.Job{}, batch.ErrNotFound
	}
	j, err := jobs.Get(ctx, tenantID, id)
	if err != nil {
		return batch.Job{}, err
	}
	if r.jobs == nil {
		r.jobs = map[string]batch.Job{}
	}
	r.jobs[id] = j
	return j, nil
}

// alertOrphan raises batch_orphaned for b and returns its record, with the
// tenant its usage is booked to.
func (a *Auditor) alertOrphan(ctx context.Context, r *run, b batch.AzureBatch) Record {
	rec := a.alertBatch(ctx, r, b, AlertOrphan)
	rec.Job = b.Metadata[batch.MetaJob]
	rec.Tenant = b.Metadata["tenant"]
	return rec
}
