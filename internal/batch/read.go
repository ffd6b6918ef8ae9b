package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
)

// ErrNotReady: a job has no harvested results yet.
var ErrNotReady = errors.New("results not ready")

// Get returns a tenant's job; another tenant's job is ErrNotFound, like a
// job that does not exist. A packed job shows where its pack is (see
// packView); it is a view, never written back.
func (s *Service) Get(ctx context.Context, tenantID, id string) (Job, error) {
	j, err := s.read(ctx, tenantID, id)
	if err != nil {
		return j, err
	}
	return s.packView(ctx, j, map[string]*Job{}), nil
}

// read returns a tenant's job as stored.
func (s *Service) read(ctx context.Context, tenantID, id string) (Job, error) {
	if !ValidJobID(id) {
		return Job{}, fmt.Errorf("job %q: %w", clip(id), ErrNotFound)
	}
	return s.o.Jobs.Get(ctx, tenantID, id)
}

// Limits of List.
const (
	DefaultListLimit = 50
	MaxListLimit     = 200
)

// List returns a page of a tenant's jobs, newest first, optionally only
// those in state, starting after the cursor (a job id from the previous
// page's next). next is empty on the last page.
func (s *Service) List(ctx context.Context, tenantID string, state State, cursor string, limit int) (jobs []Job, next string, err error) {
	if cursor != "" && !ValidJobID(cursor) {
		return nil, "", invalid("invalid_cursor", "cursor: not a cursor this API returned")
	}
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	jobs, err = s.o.Jobs.List(ctx, tenantID, state, cursor, limit+1)
	if err != nil {
		return nil, "", err
	}
	if len(jobs) > limit {
		jobs = jobs[:limit]
		next = jobs[limit-1].ID
	}
	packs := map[string]*Job{}
	for i := range jobs {
		jobs[i] = s.packView(ctx, jobs[i], packs)
	}
	return jobs, next, nil
}

// Results streams a job's per-item results from platform storage: the
// results of its harvested parts, in part order. complete is false while
// parts are still to be harvested. With nothing harvested yet it returns
// ErrNotReady.
func (s *Service) Results(ctx context.Context, tenantID, id string) (r io.ReadCloser, j Job, complete bool, err error) {
	if j, err = s.Get(ctx, tenantID, id); err != nil {
		return nil, Job{}, false, err
	}
	var blobs []string
	for i := range j.Parts {
		if p := &j.Parts[i]; p.Status == PartHarvested && p.ResultsBlob != "" {
			blobs = append(blobs, p.ResultsBlob)
		}
	}
	if len(blobs) == 0 {
		return nil, j, false, fmt.Errorf("job %s is %s: %w", j.ID, j.State, ErrNotReady)
	}
	// Open the first now, so that a storage failure is an error rather
	// than a truncated body.
	first, err := s.openResults(ctx, blobs[0])
	if err != nil {
		return nil, j, false, err
	}
	return &concat{ctx: ctx, s: s, cur: first, rest: blobs[1:]}, j, len(blobs) == len(j.Parts), nil
}

// concat reads blobs one after the other, opening each when its turn comes.
type concat struct {
	ctx  context.Context
	s    *Service
	cur  io.ReadCloser
	rest []string
}

func (c *concat) Read(p []byte) (int, error) {
	for {
		if c.cur == nil {
			if len(c.rest) == 0 {
				return 0, io.EOF
			}
			body, err := c.s.openResults(c.ctx, c.rest[0])
			if err != nil {
				return 0, err
			}
			c.cur, c.rest = body, c.rest[1:]
		}
		n, err := c.cur.Read(p)
		if errors.Is(err, io.EOF) {
			c.cur.Close()
			c.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (c *concat) Close() error {
	if c.cur != nil {
		return c.cur.Close()
	}
	return nil
}

// JobByKey returns the tenant's job made with an idempotency key, or
// ErrNotFound: how a scheduled submitter finds out that it ran already.
func (s *Service) JobByKey(ctx context.Context, tenantID, key string) (Job, error) {
	id, _, err := s.o.Jobs.FindKey(ctx, tenantID, key)
	if err != nil {
		return Job{}, err
	}
	return s.o.Jobs.Get(ctx, tenantID, id)
}

// Held returns every tenant's jobs that have a part waiting for admission
// after an attempt (its HeldReason says why), oldest first: the poller's
// index of active jobs, each read. A job that ended since the index was
// read is left out.
func (s *Service) Held(ctx context.Context) ([]Job, error) {
	refs, err := s.o.Jobs.ListActive(ctx)
	if err != nil {
		return nil, err
	}
	out := []Job{}
	for _, ref := range refs {
		j, err := s.o.Jobs.Get(ctx, ref.Tenant, ref.ID)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("held jobs: %w", err)
		}
		for i := range j.Parts {
			if p := &j.Parts[i]; p.Status == PartPending && p.HeldReason != "" {
				out = append(out, j)
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b Job) int { return a.Created.Compare(b.Created) })
	return out, nil
}
