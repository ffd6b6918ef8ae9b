package batch

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// rangeGap is the widest gap in creation time between two of a tenant's
// active jobs that one range query spans: a wider one starts another
// range, so an old job still active does not make the tick read every job
// made since.
const rangeGap = time.Hour

// jobRange is a run of one tenant's active jobs, newest first.
type jobRange struct {
	tenant         string
	newest, oldest string
	jobs           int
}

// planRanges groups the index's entries into ranges of each tenant's job
// ids with no gap wider than rangeGap.
func planRanges(refs []ActiveRef) []jobRange {
	byTenant := map[string][]string{}
	for _, r := range refs {
		if ValidJobID(r.ID) {
			byTenant[r.Tenant] = append(byTenant[r.Tenant], r.ID)
		}
	}
	var out []jobRange
	for tn, ids := range byTenant {
		slices.Sort(ids) // newest first
		cur := jobRange{tenant: tn, newest: ids[0], oldest: ids[0], jobs: 1}
		for _, id := range ids[1:] {
			if jobIDTime(cur.oldest).Sub(jobIDTime(id)) > rangeGap {
				out = append(out, cur)
				cur = jobRange{tenant: tn, newest: id, jobs: 0}
			}
			cur.oldest = id
			cur.jobs++
		}
		out = append(out, cur)
	}
	slices.SortFunc(out, func(a, b jobRange) int {
		return cmp.Or(cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.newest, b.newest))
	})
	return out
}

// readActive reads the active jobs of the index a range at a time instead
// of one point read each. A job it did not find (harvested, with files
// left to delete; not recorded; or a range that failed) is read on its own
// later, as before.
func (s *Service) readActive(ctx context.Context, refs []ActiveRef) map[string]Job {
	ranges := planRanges(refs)
	out := make(map[string]Job, len(refs))
	var mu sync.Mutex
	sem := make(chan struct{}, s.o.Concurrency)
	var wg sync.WaitGroup
	for _, r := range ranges {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			jobs, err := s.o.Jobs.Unfinished(ctx, r.tenant, r.newest, r.oldest)
			if err != nil {
				zerolog.Ctx(ctx).Warn().Err(err).Str("tenant", r.tenant).Int("jobs", r.jobs).
					Msg("active jobs not read at once; each is read on its own")
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, j := range jobs {
				out[j.ID] = j
			}
		}()
	}
	wg.Wait()
	return out
}

// listDue reads the state of every due batch of jobs from Azure's batch
// list, down to the oldest one's submission; what the list did not show
// is asked for with a GET each, job by job.
func (s *Service) listDue(ctx context.Context, jobs map[string]Job) map[string]AzureBatch {
	now := s.now()
	var ids []string
	since, bounded := now, true
	for _, j := range jobs {
		for i := range j.Parts {
			if p := &j.Parts[i]; s.pollDue(&j, p, now) {
				ids = append(ids, p.BatchID)
				bounded = bounded && !p.SubmittedAt.IsZero()
				if p.SubmittedAt.Before(since) {
					since = p.SubmittedAt
				}
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if !bounded {
		since = time.Time{} // a part without a submission time: no bound
	}
	seen, err := s.o.Azure.ListBatchStates(ctx, ids, since)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Int("listed", len(seen)).Int("due", len(ids)).
			Msg("batch list not read through; the batches it did not show are asked for one by one")
	}
	return seen
}
