package batch

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/lines"
	"github.com/offpath/offpath/internal/object"
)

// split is what a pack's output and error files hold for one member: its
// own lines, by file kind (output, errors), and their copies once stored.
type split struct {
	lines  [2]int64
	buf    [2]bytes.Buffer
	copies []FileCopy
}

// harvestPack takes an ended pack through split → deliver → delete at
// Azure → mark harvested. The split reads Azure's files once and stores
// each member's own lines (found by the job id that starts every
// custom_id) as that member's copies, in the member's own area of the
// results container; deliver hands each member its copies, in one
// conditional write on the member's row, as if its own batch had ended
// with them. From there each member is harvested like any part: its
// results, counts and ledger row (LedgerUnit of the member) are its own.
// Once every member's copies are stored, the pack's part records it
// (Copied): a harvest repeated after a crash before that splits again
// from Azure's files (not deleted before every member has its copies) and
// writes the same copies; one repeated after it reads the copies back
// (storedSplits), never Azure's files again. Either skips the members
// already delivered; the ledger is only ever written by the members' own
// harvests.
func (s *Service) harvestPack(ctx context.Context, j Job, i int, owner string) (Job, error) {
	log := zerolog.Ctx(ctx).With().Str("pack", j.ID).Logger()
	p := j.Parts[i]
	if p.Status != PartDone {
		return j, nil
	}
	live := j.Pack.live()
	var splits map[string]*split
	var err error
	if p.Copied {
		// Split and stored by a harvest that stopped before the end: the
		// members' copies are read back, Azure's files never again.
		if splits, err = s.storedSplits(ctx, &p, live); err != nil {
			return j, err
		}
	} else {
		var stray int64
		if splits, stray, err = s.splitPack(ctx, &j, &p, live); err != nil {
			return j, err
		}
		mismatch := ""
		if stray > 0 {
			mismatch = fmt.Sprintf("%d lines name no member of the pack", stray)
		}
		lost := p.OutputLost
		if j, err = s.update(ctx, j, s.holding(owner, func(j *Job) error {
			q := &j.Parts[i]
			if q.Copied || q.Status != PartDone {
				return errSkip
			}
			q.Copied, q.Mismatch, q.OutputLost = true, mismatch, lost
			return nil
		})); err != nil {
			return j, err
		}
		p = j.Parts[i]
		if p.Status != PartDone {
			return j, nil // harvested meanwhile
		}
	}
	if err := s.deliverAll(ctx, &j, &p, splits); err != nil {
		return j, err
	}
	var leftover []string
	for _, id := range []string{p.OutputFileID, p.ErrorFileID, p.InputFileID} {
		if id == "" {
			continue
		}
		if err := s.o.Azure.DeleteFile(ctx, id); err != nil && !errors.Is(err, ErrAzureNotFound) {
			leftover = append(leftover, id)
		}
	}
	mismatch := p.Mismatch
	j, err = s.update(ctx, j, s.holding(owner, func(j *Job) error {
		q := &j.Parts[i]
		if q.Status != PartDone {
			return errSkip
		}
		now := s.now()
		q.Status, q.HarvestedAt = PartHarvested, now
		for _, id := range leftover {
			if !slices.Contains(j.Cleanup, id) {
				j.Cleanup = append(j.Cleanup, id)
			}
		}
		if allHarvested(j) {
			j.HarvestedAt = now
		}
		return nil
	}))
	if err != nil {
		return j, err
	}
	log.Info().Int("jobs", len(live)).Int("lines", p.Lines).Msg("pack harvested: every job has its lines")
	if mismatch != "" {
		s.raise(ctx, &j, AlertCountsMismatch, "a pack's output has lines that belong to none of its jobs",
			map[string]any{"part": i, "detail": mismatch})
	}
	return j, nil
}

// splitPack reads the pack's files at Azure and stores each member's lines
// as its copies. Lines whose custom_id names no member are counted
// (stray), never stored. A file Azure no longer has marks the pack's
// output lost. The pack is bounded (PackOptions), so its lines are held
// in memory between reading and storing.
func (s *Service) splitPack(ctx context.Context, j *Job, p *Part, live []PackMember) (map[string]*split, int64, error) {
	splits := make(map[string]*split, len(live))
	for _, m := range live {
		splits[m.Job] = &split{}
	}
	var stray int64
	buf := make([]byte, 0, 64<<10)
	for kind, id := range []string{p.OutputFileID, p.ErrorFileID} {
		if id == "" {
			continue
		}
		body, err := s.o.Azure.OpenFileContent(ctx, id)
		if errors.Is(err, ErrAzureNotFound) {
			p.OutputLost = true
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		br := bufio.NewReaderSize(body, 256<<10)
		for {
			line, err := lines.Read(br, buf, batchfile.DefaultMaxLineBytes)
			if errors.Is(err, io.EOF) {
				break
			}
			if errors.Is(err, lines.ErrTooLong) {
				stray++
				continue
			}
			if err != nil {
				body.Close()
				return nil, 0, fmt.Errorf("read pack file %s: %w", id, err)
			}
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			sp := splits[lineJob(line)]
			if sp == nil {
				stray++
				continue
			}
			sp.lines[kind]++
			sp.buf[kind].Write(line)
			sp.buf[kind].WriteByte('\n')
		}
		body.Close()
	}
	if err := s.storeSplits(ctx, p, live, splits); err != nil {
		return nil, 0, err
	}
	return splits, stray, nil
}

// lineJob is the job id that starts a line's custom_id ("" if none).
func lineJob(line []byte) string {
	var l struct {
		CustomID string `json:"custom_id"`
	}
	if json.Unmarshal(line, &l) != nil {
		return ""
	}
	ref, err := batchfile.ParseCustomID(l.CustomID)
	if err != nil {
		return ""
	}
	return ref.Job
}

// storeSplits writes each member's lines to its area of the results
// container, a few at once.
func (s *Service) storeSplits(ctx context.Context, p *Part, live []PackMember, splits map[string]*split) error {
	sem := make(chan struct{}, max(1, s.o.AdmitConcurrency*2))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, m := range live {
		sp := splits[m.Job]
		for kind, id := range []string{p.OutputFileID, p.ErrorFileID} {
			if sp.buf[kind].Len() == 0 {
				continue
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				name := splitBlob(p, m, kind)
				c, err := s.storeCopy(ctx, name, id, sp.buf[kind].Bytes())
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				sp.copies = append(sp.copies, c)
			}()
		}
	}
	wg.Wait()
	for _, sp := range splits {
		// Output before errors, whatever order the writes ended in.
		slices.SortFunc(sp.copies, func(a, b FileCopy) int {
			return boolInt(a.AzureFileID == p.ErrorFileID) - boolInt(b.AzureFileID == p.ErrorFileID)
		})
	}
	return errors.Join(errs...)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// storedSplits reads back the copies splitPack stored for each member
// (their names are derived from the member and the pack's batch; a
// member with no line of a kind has no copy of it): each copy's size,
// checksum and lines, as the split recorded them.
func (s *Service) storedSplits(ctx context.Context, p *Part, live []PackMember) (map[string]*split, error) {
	splits := make(map[string]*split, len(live))
	for _, m := range live {
		sp := &split{}
		splits[m.Job] = sp
		for kind, id := range []string{p.OutputFileID, p.ErrorFileID} {
			if id == "" {
				continue
			}
			name := splitBlob(p, m, kind)
			r, _, err := s.o.Blobs.Open(ctx, s.o.Containers.Results, name)
			if errors.Is(err, object.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read back %s: %w", name, err)
			}
			h := sha256.New()
			data, err := io.ReadAll(io.TeeReader(r, h))
			r.Close()
			if err != nil {
				return nil, fmt.Errorf("read back %s: %w", name, err)
			}
			sp.lines[kind] = int64(bytes.Count(data, []byte{'\n'}))
			sp.copies = append(sp.copies, FileCopy{AzureFileID: id, Blob: name, Bytes: int64(len(data)), SHA256: hex.EncodeToString(h.Sum(nil))})
		}
	}
	return splits, nil
}

// splitBlob is where a member's lines of kind (0 output, 1 errors) of
// the pack's batch are stored.
func splitBlob(p *Part, m PackMember, kind int) string {
	return partBlob(&Job{Tenant: m.Tenant, ID: m.Job}, m.Part, p.BatchID+"."+[]string{"output", "errors"}[kind]+".jsonl")
}

func (s *Service) storeCopy(ctx context.Context, name, fileID string, data []byte) (FileCopy, error) {
	w, err := s.o.Blobs.Create(ctx, s.o.Containers.Results, name, map[string]string{"azure_file_id": fileID})
	if err != nil {
		return FileCopy{}, err
	}
	if _, err := w.Write(data); err != nil {
		w.Abort(err)
		return FileCopy{}, fmt.Errorf("store %s: %w", name, err)
	}
	if err := w.Close(); err != nil {
		return FileCopy{}, fmt.Errorf("store %s: %w", name, err)
	}
	return FileCopy{AzureFileID: fileID, Blob: name, Bytes: w.Size(), SHA256: w.SHA256()}, nil
}

// deliverAll delivers to every member, a few at once, reading the
// members a range query per run of a tenant's jobs (as the tick reads
// active jobs) rather than a point read each.
func (s *Service) deliverAll(ctx context.Context, pk *Job, p *Part, splits map[string]*split) error {
	refs := make([]ActiveRef, len(pk.Pack.Members))
	for k, m := range pk.Pack.Members {
		refs[k] = ActiveRef{Tenant: m.Tenant, ID: m.Job}
	}
	read := s.readActive(ctx, refs)
	sem := make(chan struct{}, s.o.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, m := range pk.Pack.Members {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			var pre *Job
			if j, ok := read[m.Job]; ok && j.Tenant == m.Tenant {
				pre = &j
			}
			if err := s.deliver(ctx, pk, p, m, splits[m.Job], pre); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("deliver to job %s: %w", m.Job, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// deliver hands a member its part of the ended pack: the batch's end and
// its own copies (none for a member that left the pack), in one
// conditional write on the member as read (pre, or a point read). A
// member delivered already is left as it is. It sees nothing of the
// others: not their lines, not the pack's counts, ids or errors' line
// numbers.
func (s *Service) deliver(ctx context.Context, pk *Job, p *Part, m PackMember, sp *split, pre *Job) error {
	var j Job
	if pre != nil {
		j = *pre
	} else {
		var err error
		if j, err = s.o.Jobs.Get(ctx, m.Tenant, m.Job); errors.Is(err, ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
	}
	_, err := s.update(ctx, j, func(j *Job) error {
		k := slices.IndexFunc(j.Parts, func(q Part) bool { return q.Index == m.Part })
		if k < 0 {
			return errSkip
		}
		q := &j.Parts[k]
		if q.Pack != pk.ID || q.Status != PartPending {
			return errSkip
		}
		now := s.now()
		q.Status, q.FinishedAt = PartDone, p.FinishedAt
		if q.FinishedAt.IsZero() {
			q.FinishedAt = now
		}
		if m.Removed || sp == nil {
			q.AzureStatus = AzureCancelled
			return nil
		}
		q.AzureStatus, q.Deployment, q.Placement, q.PlacementDetail = p.AzureStatus, p.Deployment, p.Placement, p.PlacementDetail
		q.SubmittedAt, q.AzureExpiry, q.OutputExpiresAt = p.SubmittedAt, p.AzureExpiry, p.OutputExpiresAt
		q.OutputFileID, q.ErrorFileID, q.OutputLost = p.OutputFileID, p.ErrorFileID, p.OutputLost
		q.Copied, q.Copies = true, sp.copies
		if p.RequestCounts.Total > 0 {
			q.RequestCounts = RequestCounts{Total: int64(m.Lines), Completed: sp.lines[0], Failed: sp.lines[1]}
		}
		q.Errors = nil
		for _, e := range p.Errors {
			q.Errors = append(q.Errors, BatchError{Code: e.Code, Message: e.Message})
		}
		if m.Cancelled && p.AzureStatus == AzureCompleted {
			// Cancelled once its lines were submitted: what ran is billed,
			// the rest is cancelled, as for a job cancelled alone.
			q.AzureStatus = AzureCancelled
		}
		return nil
	})
	return err
}
