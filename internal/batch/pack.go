package batch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batchfile"
)

// PackTenant owns the packs' own rows in the job store. Tenant ids start
// with a letter, so it is no tenant's: no tenant can read a pack.
const PackTenant = "~pack"

// PackOptions turn packing on and shape it (see the package
// documentation, "Packing"). MaxItems 0 turns it off.
type PackOptions struct {
	// MaxItems and MaxTokens make a job small: at most this many items
	// and at most this many estimated tokens (input and completion
	// allowance), written to one part.
	MaxItems  int
	MaxTokens int64
	// Window is the longest a small job is held waiting for others.
	Window time.Duration
	// TargetLines closes a pack as soon as it has this many lines.
	TargetLines int
	// MaxMembers bounds the jobs of one pack (its row lists them).
	MaxMembers int
}

// Defaults of packing (on when MaxItems is set).
const (
	DefaultPackMaxTokens   = 200_000
	DefaultPackWindow      = 10 * time.Minute
	DefaultPackTargetLines = 10_000
	DefaultPackMaxMembers  = 2_000
)

// Pack is a pack's own row's record of its members.
type Pack struct {
	Members []PackMember `json:"members"`
	// Sealed: the pack's admission began; its members are fixed from then
	// on (a cancelled member's lines stay and run).
	Sealed bool `json:"sealed,omitempty"`
}

// PackMember is one job's part in a pack.
type PackMember struct {
	Tenant string `json:"tenant"`
	Job    string `json:"job"`
	Part   int    `json:"part"`
	Lines  int    `json:"lines"`
	Bytes  int64  `json:"bytes"`
	Tokens int64  `json:"tokens"`
	// Input is the member's own input blob, copied into the pack's.
	Input string `json:"input"`
	// Removed: the member's job was cancelled before the pack was sealed;
	// its lines are not in the pack's file.
	Removed bool `json:"removed,omitempty"`
	// Cancelled: cancelled after the pack was sealed; its lines run.
	Cancelled bool `json:"cancelled,omitempty"`
}

// live are the members whose lines are in the pack's file.
func (pk *Pack) live() []PackMember {
	var out []PackMember
	for _, m := range pk.Members {
		if !m.Removed {
			out = append(out, m)
		}
	}
	return out
}

// packing reports whether packing is on.
func (s *Service) packing() bool { return s.o.Pack.MaxItems > 0 }

// small reports whether a job may be packed: packing is on, the job is
// small, not urgent, not cancelled, written to one part that has never
// been tried, and not packed yet. A job with a deadline (CompleteBy) is
// never packed: meeting it may take cancelling its batch at Azure, which
// a batch shared with other jobs cannot be.
func (s *Service) small(j *Job) bool {
	if !s.packing() || j.Tenant == PackTenant || j.Urgent || !j.CompleteBy.IsZero() || j.CancelRequested || len(j.Parts) != 1 {
		return false
	}
	p := &j.Parts[0]
	return j.Items <= s.o.Pack.MaxItems && j.EstimatedTokens <= s.o.Pack.MaxTokens &&
		p.Status == PartPending && p.Pack == "" && p.HeldReason == "" && p.Attempt == 0 &&
		p.InputFileID == "" && !p.MaybeCreated
}

// packDue is when a small job stops waiting: the packing window after its
// creation.
func (s *Service) packDue(j *Job) time.Time { return j.Created.Add(s.o.Pack.Window) }

// heldForPack reports whether the admission passes over a job: a small
// job waiting for its pack to fill, or already packed.
func (s *Service) heldForPack(j *Job, p *Part, now time.Time) bool {
	return p.Pack != "" || s.small(j) && now.Before(s.packDue(j))
}

// packKey groups the small jobs that may share a file: same alias, data
// zone and written-for deployment.
type packKey struct{ alias, zone, deployment string }

// packJobs is the packer's step of the poll tick. Small jobs are grouped
// by alias, data zone and deployment, oldest first. A group closes a pack
// at once whenever it has TargetLines lines; what is left waits until its
// oldest job is due, and is then packed whole (a group of one job is left
// to be submitted alone). A pack is bounded like a part (lines, bytes,
// and its deployment's quota) and by MaxMembers. It returns the tick's
// jobs with the packed members as they now stand and the new packs, for
// admission; it also frees members of packs that were never recorded.
func (s *Service) packJobs(ctx context.Context, t *tick, jobs []*Job) []*Job {
	if !s.packing() {
		return jobs
	}
	now := s.now()
	packs := map[string]bool{}
	for _, j := range jobs {
		if j.Tenant == PackTenant {
			packs[j.ID] = true
		}
	}
	groups := map[packKey][]*Job{}
	for _, j := range jobs {
		if p := &j.Parts[0]; len(j.Parts) == 1 && p.Pack != "" && p.Status == PartPending && !packs[p.Pack] &&
			now.Sub(p.PackedAt) > s.o.LeaseTTL {
			s.freeOrphan(ctx, j)
			continue
		}
		if !s.small(j) || j.leasedByOther(t.owner, now) {
			continue
		}
		k := packKey{j.Alias, j.DataZone, j.Parts[0].Deployment}
		groups[k] = append(groups[k], j)
	}
	updated := map[string]*Job{}
	var added []*Job
	for k, g := range groups {
		slices.SortFunc(g, func(a, b *Job) int { return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID)) })
		for len(g) > 0 {
			n, full := s.fill(k.deployment, g)
			if !full && now.Before(s.packDue(g[0])) {
				break // not full, and nobody's window has ended
			}
			if n < 2 {
				break // alone: submitted as it is
			}
			pk, members, err := s.formPack(ctx, k, g[:n])
			if err != nil {
				zerolog.Ctx(ctx).Error().Err(err).Str("alias", k.alias).Msg("pack not formed; its jobs wait for the next tick")
			}
			for _, m := range members {
				updated[m.ID] = m
			}
			if pk != nil {
				added = append(added, pk)
			}
			g = g[n:]
		}
	}
	for i, j := range jobs {
		if u := updated[j.ID]; u != nil {
			jobs[i] = u
		}
	}
	return append(jobs, added...)
}

// fill is how many of the group's jobs (oldest first) the next pack
// takes, and whether that pack is full.
func (s *Service) fill(deployment string, g []*Job) (int, bool) {
	lim := s.partLimits(deployment)
	maxLines := min(s.o.Pack.TargetLines, cmp.Or(lim.MaxLines, batchfile.DefaultMaxLines))
	quota := s.o.Quota[deployment]
	var lines int
	var bytes, tokens int64
	for n, j := range g {
		p := &j.Parts[0]
		if n >= s.o.Pack.MaxMembers || lines+p.Lines > maxLines || bytes+p.Bytes > lim.MaxBytes ||
			quota > 0 && tokens+p.EstimatedTokens > quota {
			return n, true
		}
		lines, bytes, tokens = lines+p.Lines, bytes+p.Bytes, tokens+p.EstimatedTokens
	}
	return len(g), lines >= maxLines
}

// formPack records a pack of the given jobs: the poller's index entry
// first, then each member's part is marked with the pack's id (a
// conditional write: a job cancelled or packed by another poller
// meanwhile stays out), then the pack's row listing those that were
// marked. A member marked whose pack row was never recorded is freed by a
// later tick (freeOrphan). It returns the pack (nil if none was recorded)
// and the members as now stored.
func (s *Service) formPack(ctx context.Context, k packKey, g []*Job) (*Job, []*Job, error) {
	now := s.now()
	id, err := NewJobID(now, s.o.Rand)
	if err != nil {
		return nil, nil, err
	}
	if err := s.o.Jobs.MarkActive(ctx, PackTenant, id); err != nil {
		return nil, nil, err
	}
	stored := make([]*Job, len(g))
	sem := make(chan struct{}, s.o.Concurrency)
	var wg sync.WaitGroup
	for i, j := range g {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			u, err := s.update(ctx, *j, func(j *Job) error {
				if !s.small(j) {
					return errSkipAdmit
				}
				j.Parts[0].Pack, j.Parts[0].PackedAt = id, now
				return nil
			})
			if err != nil {
				if !errors.Is(err, errSkipAdmit) {
					zerolog.Ctx(ctx).Warn().Err(err).Str("job", j.ID).Msg("job not packed")
				}
				return
			}
			stored[i] = &u
		}()
	}
	wg.Wait()
	pk := Job{ID: id, Tenant: PackTenant, Alias: k.alias, DataZone: k.zone, Created: now, Updated: now, Source: "pack",
		Pack: &Pack{}}
	part := Part{Index: 0, Deployment: k.deployment, Status: PartPending, InputBlob: partBlob(&pk, 0, "input.jsonl")}
	var members []*Job
	for _, m := range stored {
		if m == nil {
			continue
		}
		members = append(members, m)
		p := &m.Parts[0]
		pk.Pack.Members = append(pk.Pack.Members, PackMember{Tenant: m.Tenant, Job: m.ID, Part: p.Index, Lines: p.Lines,
			Bytes: p.Bytes, Tokens: p.EstimatedTokens, Input: p.InputBlob})
		part.Lines, part.Bytes, part.EstimatedTokens = part.Lines+p.Lines, part.Bytes+p.Bytes, part.EstimatedTokens+p.EstimatedTokens
	}
	if len(members) == 0 {
		return nil, nil, s.o.Jobs.Unmark(ctx, id)
	}
	pk.Items, pk.EstimatedTokens, pk.Parts = part.Lines, part.EstimatedTokens, []Part{part}
	pk.derive()
	created, err := s.o.Jobs.Create(ctx, pk, "")
	if err != nil {
		return nil, members, fmt.Errorf("record pack %s: %w", id, err)
	}
	zerolog.Ctx(ctx).Info().Str("pack", id).Str("alias", k.alias).Str("deployment", k.deployment).
		Int("jobs", len(members)).Int("lines", part.Lines).Msg("small jobs packed")
	return &created, members, nil
}

// freeOrphan frees a member whose pack row does not exist (the packer
// stopped between marking it and recording the pack): the job waits to be
// packed again.
func (s *Service) freeOrphan(ctx context.Context, j *Job) {
	packID := j.Parts[0].Pack
	if _, err := s.o.Jobs.Get(ctx, PackTenant, packID); !errors.Is(err, ErrNotFound) {
		return // the pack exists (or cannot be read now)
	}
	u, err := s.update(ctx, *j, func(j *Job) error {
		if p := &j.Parts[0]; p.Pack != packID || p.Status != PartPending {
			return errSkip
		}
		j.Parts[0].Pack, j.Parts[0].PackedAt = "", time.Time{}
		return nil
	})
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("job", j.ID).Msg("job of an unrecorded pack not freed")
		return
	}
	*j = u
}

// packView shows a packed job where its pack is: a part whose pack's
// batch runs at Azure is submitted, with the batch's status, deployment
// and times; a part whose pack waits for quota is held, with the pack's
// reason. Nothing else of the pack shows: not its batch id, its other
// jobs or its counts. A pack that cannot be read leaves the job as
// stored. packs caches the packs read, by id.
func (s *Service) packView(ctx context.Context, j Job, packs map[string]*Job) Job {
	if !slices.ContainsFunc(j.Parts, func(p Part) bool { return p.Pack != "" && p.Status == PartPending }) {
		return j
	}
	j = cloneJob(j)
	for i := range j.Parts {
		p := &j.Parts[i]
		if p.Pack == "" || p.Status != PartPending {
			continue
		}
		pk, seen := packs[p.Pack]
		if !seen {
			if got, err := s.o.Jobs.Get(ctx, PackTenant, p.Pack); err == nil && len(got.Parts) > 0 {
				pk = &got
			}
			packs[p.Pack] = pk
		}
		if pk == nil {
			continue
		}
		q := &pk.Parts[0]
		switch {
		case q.Status == PartSubmitted || q.Status == PartDone && q.BatchID != "":
			p.Status, p.AzureStatus, p.Deployment = PartSubmitted, q.AzureStatus, q.Deployment
			p.Placement, p.PlacementDetail, p.SubmittedAt, p.AzureExpiry = q.Placement, q.PlacementDetail, q.SubmittedAt, q.AzureExpiry
		case q.Status == PartPending && q.HeldReason != "":
			p.HeldReason, p.HeldSince, p.NextAttemptAt = q.HeldReason, q.HeldSince, q.NextAttemptAt
		}
	}
	j.derive()
	return j
}
