package memstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/offpath/offpath/internal/batch"
)

// Jobs is an in-memory batch.JobStore, as tablestore's Jobs behaves: a job
// is kept as its JSON document (what is read is a copy, never the caller's
// value), every write gives it a new ETag, Update is conditional on the
// ETag, ids sort newest first and the poller's index is sorted by job id.
type Jobs struct {
	now func() time.Time

	mu     sync.Mutex
	jobs   map[jobKey]stored
	keys   map[jobKey]idemKey // by tenant and idempotency key
	active map[string]batch.ActiveRef
	seq    int64
}

type jobKey struct{ tenant, id string }

type stored struct {
	doc  []byte
	etag string
}

type idemKey struct{ job, fingerprint string }

// NewJobs returns an empty job store; now stamps index entries (nil:
// time.Now).
func NewJobs(now func() time.Time) *Jobs {
	if now == nil {
		now = time.Now
	}
	return &Jobs{now: now, jobs: map[jobKey]stored{}, keys: map[jobKey]idemKey{}, active: map[string]batch.ActiveRef{}}
}

func (s *Jobs) etag() string {
	s.seq++
	return `W/"` + strconv.FormatInt(s.seq, 10) + `"`
}

func (s *Jobs) encode(j batch.Job) (stored, error) {
	doc, err := json.Marshal(j)
	if err != nil {
		return stored{}, fmt.Errorf("encode job %s: %w", j.ID, err)
	}
	return stored{doc: doc, etag: s.etag()}, nil
}

func decode(st stored) batch.Job {
	var j batch.Job
	if err := json.Unmarshal(st.doc, &j); err != nil {
		panic(fmt.Sprintf("memstore: a stored job does not decode: %v", err))
	}
	j.ETag = st.etag
	return j
}

// Create stores a new job and its idempotency key (if any) atomically.
func (s *Jobs) Create(_ context.Context, j batch.Job, fingerprint string) (batch.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := jobKey{j.Tenant, j.ID}
	if j.IdempotencyKey != "" {
		if held, ok := s.keys[jobKey{j.Tenant, j.IdempotencyKey}]; ok {
			return batch.Job{}, &batch.DuplicateError{JobID: held.job, Fingerprint: held.fingerprint}
		}
	}
	if _, ok := s.jobs[k]; ok {
		return batch.Job{}, fmt.Errorf("create job %s: it exists already", j.ID)
	}
	st, err := s.encode(j)
	if err != nil {
		return batch.Job{}, err
	}
	s.jobs[k] = st
	if j.IdempotencyKey != "" {
		s.keys[jobKey{j.Tenant, j.IdempotencyKey}] = idemKey{job: j.ID, fingerprint: fingerprint}
	}
	return decode(st), nil
}

// FindKey returns the job holding a tenant's idempotency key.
func (s *Jobs) FindKey(_ context.Context, tenantID, key string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held, ok := s.keys[jobKey{tenantID, key}]
	if !ok {
		return "", "", fmt.Errorf("idempotency key: %w", batch.ErrNotFound)
	}
	return held.job, held.fingerprint, nil
}

// Get returns a tenant's job with its ETag.
func (s *Jobs) Get(_ context.Context, tenantID, id string) (batch.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.jobs[jobKey{tenantID, id}]
	if !ok || !batch.ValidJobID(id) {
		return batch.Job{}, fmt.Errorf("job %s: %w", id, batch.ErrNotFound)
	}
	return decode(st), nil
}

// Update replaces a job if its ETag still matches.
func (s *Jobs) Update(_ context.Context, j batch.Job) (batch.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := jobKey{j.Tenant, j.ID}
	old, ok := s.jobs[k]
	switch {
	case !ok:
		return batch.Job{}, fmt.Errorf("job %s: %w", j.ID, batch.ErrNotFound)
	case old.etag != j.ETag:
		return batch.Job{}, fmt.Errorf("job %s: %w", j.ID, batch.ErrConflict)
	}
	st, err := s.encode(j)
	if err != nil {
		return batch.Job{}, err
	}
	s.jobs[k] = st
	j.ETag = st.etag
	return j, nil
}

// sorted returns a tenant's jobs, newest first (ids sort so), with
// their ETags; keep picks which.
func (s *Jobs) sorted(tenantID string, keep func(batch.Job) bool) []batch.Job {
	var out []batch.Job
	for k, st := range s.jobs {
		if k.tenant != tenantID {
			continue
		}
		if j := decode(st); keep(j) {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b batch.Job) int { return compare(a.ID, b.ID) })
	return out
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// List returns up to limit of a tenant's jobs, newest first, after the
// job id after, in state (empty: any).
func (s *Jobs) List(_ context.Context, tenantID string, state batch.State, after string, limit int) ([]batch.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sorted(tenantID, func(j batch.Job) bool {
		return (after == "" || j.ID > after) && (state == "" || j.State == state)
	})
	if out == nil || limit <= 0 {
		return []batch.Job{}, nil
	}
	return out[:min(len(out), limit)], nil
}

// Unfinished returns a tenant's jobs from newest to oldest (job ids, both
// included) that are not harvested, with their ETags.
func (s *Jobs) Unfinished(_ context.Context, tenantID, newest, oldest string) ([]batch.Job, error) {
	if !batch.ValidJobID(newest) || !batch.ValidJobID(oldest) {
		return nil, fmt.Errorf("unfinished jobs of %s: invalid range %q..%q", tenantID, newest, oldest)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sorted(tenantID, func(j batch.Job) bool {
		return j.ID >= newest && j.ID <= oldest && j.State != batch.Harvested
	}), nil
}

// MarkActive adds a job to the poller's index (again: its time is now).
func (s *Jobs) MarkActive(_ context.Context, tenantID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active[id] = batch.ActiveRef{Tenant: tenantID, ID: id, Since: s.now().UTC()}
	return nil
}

// Unmark removes a job from the poller's index; an absent entry is fine.
func (s *Jobs) Unmark(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.active, id)
	return nil
}

// ListActive returns the poller's index, by job id.
func (s *Jobs) ListActive(context.Context) ([]batch.ActiveRef, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []batch.ActiveRef
	for _, id := range slices.Sorted(maps.Keys(s.active)) {
		out = append(out, s.active[id])
	}
	return out, nil
}
