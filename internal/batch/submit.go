package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"sync"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/tenant"
)

// ErrKeyReused: an idempotency key was sent again with a different request.
var ErrKeyReused = errors.New("idempotency key reused for a different request")

// Submit checks r for the tenant t, writes the job's input parts and their
// indexes to platform storage, checks the tenant's budget against the
// job's estimate, and records the job as accepted; the poll tick admits it.
// A request refused at any step leaves nothing behind. The same
// idempotency key returns the job it made first, with replayed true.
func (s *Service) Submit(ctx context.Context, t tenant.Tenant, r Request) (job Job, replayed bool, err error) {
	if t.State != tenant.Active {
		return Job{}, false, fmt.Errorf("tenant %s: %w", t.ID, tenant.ErrSuspended)
	}
	if err := checkRequest(&r); err != nil {
		return Job{}, false, err
	}
	if !t.Allows(r.Alias) {
		return Job{}, false, fmt.Errorf("%w: %q", ErrAliasNotAllowed, clip(r.Alias))
	}
	alias, ok := s.o.Catalog.Alias(r.Alias)
	if !ok {
		return Job{}, false, fmt.Errorf("%w: %q", ErrAliasNotAllowed, clip(r.Alias))
	}
	if len(alias.Batch) == 0 {
		return Job{}, false, invalid("alias_not_batch", "alias %q has no Global Batch deployment", r.Alias)
	}
	// The input names the cheapest deployment the tenant may use; the
	// scheduler moves parts to others when it has no room.
	deps := alias.BatchFor(t.DataZone)
	if len(deps) == 0 {
		return Job{}, false, invalid("no_deployment_in_data_zone", "alias %q has no batch deployment in data zone %q", r.Alias, t.DataZone)
	}
	if err := s.checkCompleteBy(r.CompleteBy, &alias); err != nil {
		return Job{}, false, err
	}
	if r.InputBlob != "" {
		if err := checkInputBlob(t.ID, r.InputBlob); err != nil {
			return Job{}, false, err
		}
	}
	if r.IdempotencyKey != "" {
		if j, err := s.replay(ctx, t.ID, &r, ""); !errors.Is(err, ErrNotFound) {
			return j, err == nil, err
		}
	}

	now := s.now()
	id, err := NewJobID(now, s.o.Rand)
	if err != nil {
		return Job{}, false, err
	}
	job = Job{ID: id, Tenant: t.ID, Alias: r.Alias, DataZone: t.DataZone, Created: now, Updated: now, Source: "inline",
		Metadata: r.Metadata, IdempotencyKey: r.IdempotencyKey, Attributes: r.Attributes, CompleteBy: r.CompleteBy.UTC(),
		Urgent: r.Urgent}
	if r.InputBlob != "" {
		job.Source = r.InputBlob
	}
	log := zerolog.Ctx(ctx).With().Str("job", id).Str("tenant", t.ID).Logger()
	discard := func() {
		if err := s.o.Blobs.DeletePrefix(context.WithoutCancel(ctx), s.o.Containers.Inputs, inputPrefix(&job)); err != nil {
			log.Warn().Err(err).Msg("refused job's input not deleted")
		}
	}
	completion, err := s.writeInput(ctx, &job, &r, deps[0].Name)
	if err != nil {
		discard()
		return Job{}, false, err
	}
	for i := range job.Parts {
		job.EstimatedTokens += job.Parts[i].EstimatedTokens
	}
	job.EstimatedTokens += completion
	if err := s.checkBudget(ctx, t, &job); err != nil {
		discard()
		return Job{}, false, err
	}
	job.derive()

	// The poller's index first: a job recorded without it would never be
	// polled, an index entry without a job is cleaned up by the poller.
	if err := s.o.Jobs.MarkActive(ctx, t.ID, id); err != nil {
		discard()
		return Job{}, false, err
	}
	stored, err := s.o.Jobs.Create(ctx, job, r.Fingerprint)
	if err != nil {
		if uerr := s.o.Jobs.Unmark(context.WithoutCancel(ctx), id); uerr != nil {
			log.Warn().Err(uerr).Msg("index entry of an unrecorded job left for the poller")
		}
		discard()
		var dup *DuplicateError
		if errors.As(err, &dup) {
			j, err := s.replay(ctx, t.ID, &r, dup.JobID)
			return j, err == nil, err
		}
		return Job{}, false, err
	}
	log.Info().Str("alias", job.Alias).Int("items", job.Items).Int("parts", len(job.Parts)).
		Int64("estimated_tokens", job.EstimatedTokens).Msg("batch job accepted")
	return stored, false, nil
}

// replay returns the job an idempotency key made (looked up unless id is
// given), refusing a key reused for a different request.
func (s *Service) replay(ctx context.Context, tenantID string, r *Request, id string) (Job, error) {
	gotID, fp, err := s.o.Jobs.FindKey(ctx, tenantID, r.IdempotencyKey)
	if err != nil {
		if id == "" || !errors.Is(err, ErrNotFound) {
			return Job{}, err
		}
		gotID = id
	}
	if fp != "" && r.Fingerprint != "" && fp != r.Fingerprint {
		return Job{}, fmt.Errorf("%w: job %s", ErrKeyReused, gotID)
	}
	return s.o.Jobs.Get(ctx, tenantID, gotID)
}

func inputPrefix(j *Job) string { return j.Tenant + "/" + j.ID + "/" }

// writeInput streams the items into parts in the inputs container and
// fills job.Parts and job.Items. It returns the completion-token allowance
// of the items.
func (s *Service) writeInput(ctx context.Context, job *Job, r *Request, deployment string) (int64, error) {
	var cur [2]object.Writer // the part's input and index
	var inputBytes int64     // the input blob's size, known once it is open; 0 for inline items
	// closeCur commits the part and its index side by side: each Close
	// sends what is left of its blob (all of an index smaller than a block).
	closeCur := func() error {
		var errs [len(cur)]error
		var wg sync.WaitGroup
		for i, w := range cur {
			if w != nil {
				wg.Go(func() { errs[i] = w.Close() })
			}
		}
		wg.Wait()
		cur = [len(cur)]object.Writer{}
		return errors.Join(errs[:]...)
	}
	defer func() {
		for _, w := range cur {
			if w != nil {
				w.Abort(errors.New("input not written"))
			}
		}
	}()
	open := func(n int) (io.Writer, io.Writer, error) {
		if n >= s.o.MaxParts {
			return nil, nil, invalid("too_large", "the input needs more than %d parts", s.o.MaxParts)
		}
		if err := closeCur(); err != nil {
			return nil, nil, err
		}
		in, err := s.o.Blobs.CreateSized(ctx, s.o.Containers.Inputs, partBlob(job, n, "input.jsonl"), nil, partBlockSize(inputBytes))
		if err != nil {
			return nil, nil, err
		}
		cur[0] = in
		idx, err := s.o.Blobs.Create(ctx, s.o.Containers.Inputs, partBlob(job, n, "index.jsonl"), nil)
		if err != nil {
			return nil, nil, err
		}
		cur[1] = idx
		return in, idx, nil
	}
	w, err := batchfile.NewWriter(batchfile.WriterConfig{Job: job.ID, Deployment: deployment, Limits: s.partLimits(deployment)}, open)
	if err != nil {
		return 0, fmt.Errorf("input writer: %w", err)
	}
	seen := newIDSet("")
	defer seen.Close()
	var completion int64
	n := 0
	for it, err := range s.items(ctx, job.Tenant, r, func(n int64) { inputBytes = n }) {
		if err != nil {
			return 0, err
		}
		n++
		if n > s.o.MaxItems {
			return 0, invalid("too_many_items", "at most %d items per job", s.o.MaxItems)
		}
		if err := checkItem(&it, n); err != nil {
			return 0, err
		}
		if err := seen.Add(it.ID, n-1); err != nil {
			return 0, err
		}
		li := r.lineItem(job.Tenant, &it)
		if _, err := w.Add(li); err != nil {
			if errors.Is(err, batchfile.ErrInvalidItem) {
				return 0, invalid("invalid_item", "items[%d] (id %q): %v", n-1, clip(it.ID), err)
			}
			var ie *InvalidError
			if errors.As(err, &ie) {
				return 0, ie
			}
			return 0, fmt.Errorf("write input: %w", err)
		}
		if m := max(li.MaxTokens, li.MaxCompletionTokens); m > 0 {
			completion += int64(m)
		} else {
			completion += int64(s.o.CompletionTokens)
		}
	}
	if n == 0 {
		return 0, invalid("no_items", "the input has no items")
	}
	if err := seen.Check(); err != nil {
		return 0, err
	}
	parts, err := w.Close()
	if err != nil {
		return 0, fmt.Errorf("write input: %w", err)
	}
	if err := closeCur(); err != nil {
		return 0, fmt.Errorf("store input: %w", err)
	}
	job.Items = n
	job.Parts = make([]Part, len(parts))
	for i, p := range parts {
		job.Parts[i] = Part{Index: p.Index, Deployment: deployment, Lines: p.Lines, Bytes: p.Bytes,
			EstimatedTokens: p.EstimatedTokens, Status: PartPending,
			InputBlob: partBlob(job, p.Index, "input.jsonl"), IndexBlob: partBlob(job, p.Index, "index.jsonl")}
	}
	return completion, nil
}

// partLimits are the part limits for a deployment: the configured ones,
// lowered so that one part's estimate fits the deployment's quota.
func (s *Service) partLimits(deployment string) batchfile.Limits {
	l := s.o.PartLimits
	if l.MaxBytes == 0 {
		l.MaxBytes = batchfile.DefaultMaxBytes
	}
	if q := s.o.Quota[deployment]; q > 0 && q*4 < l.MaxBytes {
		l.MaxBytes = q * 4
	}
	return l
}

// maxPartBlockSize bounds the block size of a job's input part.
const maxPartBlockSize = 4 << 20

// partBlockSize is the block size of a part written from an input of n
// bytes (0: items given inline): a thirty-second of the input rounded up to
// whole MiB, from BlockSize to maxPartBlockSize. A large part takes large
// blocks: fewer requests (a quarter at 4 MiB) and a faster pass, for at
// most 6 MiB more memory. A small one keeps small blocks, so that its first
// block is staged early in the pass and its last ones do not hold up its
// end.
func partBlockSize(n int64) int64 {
	const mib = 1 << 20
	return min(max((n+32*mib-1)/(32*mib)*mib, BlockSize), maxPartBlockSize)
}

func partBlob(j *Job, n int, kind string) string {
	return j.Tenant + "/" + j.ID + "/part-" + strconv.Itoa(n) + "." + kind
}

// items yields the request's items: inline, or read from the input blob,
// whose size it gives to sized before the first item.
func (s *Service) items(ctx context.Context, tenantID string, r *Request, sized func(int64)) iter.Seq2[Item, error] {
	if r.InputBlob == "" {
		return func(yield func(Item, error) bool) {
			for _, it := range r.Items {
				if !yield(it, nil) {
					return
				}
			}
		}
	}
	return s.blobItems(ctx, r.InputBlob, sized)
}

// budgetScan bounds the jobs read to find a tenant's unharvested ones.
const budgetScan = 1000

// checkBudget checks the job's estimate, plus the estimates of the
// tenant's jobs of the same month not yet harvested (their usage is not in
// the ledger yet), against the tenant's monthly budget.
func (s *Service) checkBudget(ctx context.Context, t tenant.Tenant, job *Job) error {
	if t.MonthlyTokenBudget <= 0 {
		return nil
	}
	m := job.Month()
	var pending int64
	cursor := ""
	for scanned := 0; scanned < budgetScan; {
		page, err := s.o.Jobs.List(ctx, t.ID, "", cursor, 200)
		if err != nil {
			return err
		}
		for _, j := range page {
			if j.Month() != m {
				if j.Created.Before(m.Start()) {
					scanned = budgetScan // older jobs only from here on
					break
				}
				continue
			}
			if j.State != Harvested {
				pending += j.EstimatedTokens
			}
		}
		if len(page) < 200 {
			break
		}
		scanned += len(page)
		cursor = page[len(page)-1].ID
	}
	if err := s.o.Budgets.Check(ctx, t, m, job.EstimatedTokens+pending); err != nil {
		return fmt.Errorf("job of %d items, %d estimated tokens (%d more in jobs not yet harvested): %w",
			job.Items, job.EstimatedTokens, pending, err)
	}
	return nil
}
