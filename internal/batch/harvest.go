package batch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batchapi"
	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/ledger"
)

// harvestParts harvests every part that has ended, under the job's lease.
func (s *Service) harvestParts(ctx context.Context, t *tick, j Job) (Job, error) {
	var todo []int
	for i := range j.Parts {
		if j.Parts[i].Status == PartDone {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return j, nil
	}
	j, err := s.claim(ctx, j, t.owner)
	if err != nil {
		return j, err
	}
	var errs []error
	for _, i := range todo {
		var err error
		if j, err = s.harvest(ctx, j, i, t.owner); err != nil {
			errs = append(errs, fmt.Errorf("harvest part %d: %w", i, err))
			if errors.Is(err, errLeaseLost) {
				return j, errors.Join(errs...)
			}
			j = s.noteHarvestError(ctx, j, i, t.owner, err)
			continue
		}
		t.count(func(r *TickReport) { r.Harvested++ })
	}
	j, err = s.release(ctx, j, t.owner)
	return j, errors.Join(append(errs, err)...)
}

// noteHarvestError counts a failed harvest and alerts when it keeps
// failing.
func (s *Service) noteHarvestError(ctx context.Context, j Job, i int, owner string, cause error) Job {
	alertNow := false
	stored, err := s.update(ctx, j, s.holding(owner, func(j *Job) error {
		alertNow = false
		j.Parts[i].HarvestErrors++
		if j.Parts[i].HarvestErrors >= 3 && s.due(j, AlertHarvestFailing) {
			alertNow = true
		}
		return nil
	}))
	if err != nil {
		return j
	}
	if alertNow {
		s.raise(ctx, &stored, AlertHarvestFailing, "the harvest of a finished batch keeps failing",
			map[string]any{"part": i, "attempts": stored.Parts[i].HarvestErrors, "error": cause.Error()})
	}
	return stored
}

// harvest takes one ended part through copy → parse → results → ledger →
// delete at Azure → mark harvested. Each step may be repeated after a
// crash: the copy is skipped once recorded, the results file is rewritten
// from the copies with the same content, and the ledger row has a key
// derived from the job and part, so it is rewritten, never added twice.
func (s *Service) harvest(ctx context.Context, j Job, i int, owner string) (Job, error) {
	log := zerolog.Ctx(ctx).With().Int("part", i).Logger()
	p := j.Parts[i]
	if !p.Copied {
		copies, lost, err := s.copyFiles(ctx, &j, &p)
		if err != nil {
			return j, err
		}
		j, err = s.update(ctx, j, s.holding(owner, func(j *Job) error {
			q := &j.Parts[i]
			if q.Copied || q.Status != PartDone {
				return errSkip
			}
			q.Copied, q.Copies, q.OutputLost = true, copies, lost
			return nil
		}))
		if err != nil {
			return j, err
		}
		if lost && j.Parts[i].OutputLost {
			s.raise(ctx, &j, AlertOutputLost, "Azure deleted a finished batch's output before offpath copied it: its usage cannot be attributed",
				map[string]any{"part": i, "batch_id": p.BatchID, "azure_completed": p.RequestCounts.Completed, "azure_failed": p.RequestCounts.Failed})
		}
		p = j.Parts[i]
	}
	if p.Status != PartDone {
		return j, nil // harvested meanwhile
	}

	sum, err := s.parse(ctx, &j, &p)
	if err != nil {
		return j, err
	}
	if sum.usage.Requests > 0 || sum.usage.PromptTokens > 0 || sum.usage.CompletionTokens > 0 {
		if err := s.record(ctx, &j, &p, sum.usage); err != nil {
			return j, err
		}
	}
	var leftover []string
	for _, id := range []string{p.OutputFileID, p.ErrorFileID, p.InputFileID} {
		if id == "" {
			continue
		}
		if err := s.o.Azure.DeleteFile(ctx, id); err != nil && !errors.Is(err, batchapi.ErrNotFound) {
			log.Warn().Err(err).Str("file_id", id).Msg("Azure file not deleted; retried later")
			leftover = append(leftover, id)
		}
	}
	mismatch := reconcile(&p, &sum)
	j, err = s.update(ctx, j, s.holding(owner, func(j *Job) error {
		q := &j.Parts[i]
		if q.Status != PartDone {
			return errSkip
		}
		now := s.now()
		q.Status, q.HarvestedAt = PartHarvested, now
		q.Counts, q.Usage, q.Mismatch, q.ResultsBlob = sum.counts, sum.usage, mismatch, resultsBlob(j, q)
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
	log.Info().Int64("ok", sum.counts.OK).Int64("refused", sum.counts.Refused).Int64("failed", sum.counts.Failed).
		Int64("expired", sum.counts.Expired).Int64("cancelled", sum.counts.Cancelled).
		Int64("prompt_tokens", sum.usage.PromptTokens).Int64("completion_tokens", sum.usage.CompletionTokens).
		Msg("batch part harvested")
	if mismatch != "" {
		s.raise(ctx, &j, AlertCountsMismatch, "harvested lines disagree with Azure's request_counts",
			map[string]any{"part": i, "detail": mismatch})
	}
	return j, nil
}

func allHarvested(j *Job) bool {
	for i := range j.Parts {
		if j.Parts[i].Status != PartHarvested {
			return false
		}
	}
	return true
}

func resultsBlob(j *Job, p *Part) string { return partBlob(j, p.Index, "results.jsonl") }

// copyFiles copies a part's output and error files from Azure into the
// results container, computing each copy's SHA-256 on the way. lost is
// true when Azure no longer has a file.
func (s *Service) copyFiles(ctx context.Context, j *Job, p *Part) (copies []FileCopy, lost bool, err error) {
	for _, f := range []struct{ id, kind string }{{p.OutputFileID, "output"}, {p.ErrorFileID, "errors"}} {
		if f.id == "" {
			continue
		}
		name := partBlob(j, p.Index, p.BatchID+"."+f.kind+".jsonl")
		c, err := s.copyFile(ctx, f.id, name)
		if errors.Is(err, batchapi.ErrNotFound) {
			lost = true
			continue
		}
		if err != nil {
			return nil, false, err
		}
		copies = append(copies, c)
	}
	return copies, lost, nil
}

func (s *Service) copyFile(ctx context.Context, fileID, name string) (FileCopy, error) {
	body, err := s.o.Azure.OpenFileContent(ctx, fileID)
	if err != nil {
		return FileCopy{}, err
	}
	defer body.Close()
	w, err := s.o.Blobs.Create(ctx, s.o.Containers.Results, name, map[string]string{"azure_file_id": fileID})
	if err != nil {
		return FileCopy{}, err
	}
	if _, err := io.Copy(w, body); err != nil {
		w.Abort(err)
		return FileCopy{}, fmt.Errorf("copy Azure file %s: %w", fileID, err)
	}
	if err := w.Close(); err != nil {
		return FileCopy{}, err
	}
	return FileCopy{AzureFileID: fileID, Blob: name, Bytes: w.Size(), SHA256: w.SHA256()}, nil
}

// partSum is what reading a part's copies found.
type partSum struct {
	counts                       Counts
	usage                        Usage
	lines                        [2]int64 // lines read per file kind (output, errors)
	unattributed, dup, malformed int64
}

// parse reads a part's copies (never Azure), joins every line to its item
// through the part's index, writes the per-item results file, and sums
// counts and usage. Items no file mentions get the outcome the part's end
// implies. It verifies each copy's checksum.
func (s *Service) parse(ctx context.Context, j *Job, p *Part) (partSum, error) {
	var sum partSum
	idx := batchfile.NewIndex()
	if p.IndexBlob != "" {
		body, _, err := s.o.Blobs.Open(ctx, s.o.Containers.Inputs, p.IndexBlob)
		if err != nil {
			return sum, fmt.Errorf("open index: %w", err)
		}
		err = idx.Load(body)
		body.Close()
		if err != nil {
			return sum, fmt.Errorf("load index: %w", err)
		}
	}
	w, err := s.o.Blobs.Create(ctx, s.o.Containers.Results, resultsBlob(j, p), nil)
	if err != nil {
		return sum, err
	}
	ok := false
	defer func() {
		if !ok {
			w.Abort(errors.New("harvest failed"))
		}
	}()
	bw := bufio.NewWriterSize(w, 256<<10)
	out := newResultWriter(bw)
	seen := make([]bool, p.Lines)
	for _, c := range p.Copies {
		kind := 0 // output
		if c.AzureFileID == p.ErrorFileID {
			kind = 1
		}
		if err := s.parseCopy(ctx, c, kind, idx, p, seen, out, &sum); err != nil {
			return sum, err
		}
	}
	code, msg, missing := missingOutcome(p)
	for line := 0; line < p.Lines; line++ {
		if seen[line] {
			continue
		}
		e, found := idx.Lookup(p.Index, line)
		if !found {
			return sum, fmt.Errorf("index of part %d has no line %d", p.Index, line)
		}
		sum.counts.inc(missing)
		if err := out.write(&ResultLine{ItemID: e.ItemID, Outcome: missing, Error: &ResultError{Code: code, Message: msg},
			Part: p.Index, Line: line}); err != nil {
			return sum, err
		}
	}
	if err := bw.Flush(); err != nil {
		return sum, fmt.Errorf("write results: %w", err)
	}
	ok = true
	if err := w.Close(); err != nil {
		return sum, err
	}
	return sum, nil
}

// parseCopy reads one copied file into the results.
func (s *Service) parseCopy(ctx context.Context, c FileCopy, kind int, idx *batchfile.Index, p *Part, seen []bool, out *resultWriter, sum *partSum) error {
	body, _, err := s.o.Blobs.Open(ctx, s.o.Containers.Results, c.Blob)
	if err != nil {
		return fmt.Errorf("open copy %s: %w", c.Blob, err)
	}
	defer body.Close()
	h := sha256.New()
	rd := batchfile.NewReader(io.TeeReader(body, h), 0)
	for {
		res, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var le *batchfile.LineError
		if errors.As(err, &le) {
			sum.lines[kind]++
			line, e, ok := resolve(idx, le.CustomID)
			if !ok || seen[line] {
				sum.malformed++
				continue
			}
			seen[line] = true
			sum.counts.inc(FailedOutcome)
			if err := out.write(&ResultLine{ItemID: e.ItemID, Outcome: FailedOutcome, Part: p.Index, Line: line,
				Error: &ResultError{Code: "unreadable_output", Message: le.Reason}}); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("read copy %s: %w", c.Blob, err)
		}
		sum.lines[kind]++
		line, e, ok := resolve(idx, res.CustomID)
		if !ok {
			sum.unattributed++
			continue
		}
		if seen[line] {
			sum.dup++
			continue
		}
		seen[line] = true
		o := outcomeOf(&res)
		sum.counts.inc(o)
		if o == OK || o == Refused || (o == FailedOutcome && res.StatusCode != 0) {
			sum.usage.Requests++
			sum.usage.addLine(res.Usage)
			if o == Refused {
				sum.usage.Refusals++
			}
		}
		l := resultOf(&res, e.ItemID, p.Index, line, o)
		if err := out.write(&l); err != nil {
			return err
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != c.SHA256 {
		return fmt.Errorf("copy %s: checksum %s, recorded %s", c.Blob, got, c.SHA256)
	}
	return nil
}

// resolve joins a custom_id to its line and index entry.
func resolve(idx *batchfile.Index, customID string) (int, batchfile.IndexEntry, bool) {
	if customID == "" {
		return 0, batchfile.IndexEntry{}, false
	}
	e, err := idx.Resolve(customID)
	if err != nil {
		return 0, batchfile.IndexEntry{}, false
	}
	ref, err := batchfile.ParseCustomID(customID)
	if err != nil {
		return 0, batchfile.IndexEntry{}, false
	}
	return ref.Line, e, true
}

// missingOutcome is the outcome of an item that no copied file mentions.
func missingOutcome(p *Part) (code, message string, o Outcome) {
	switch {
	case p.OutputLost:
		return "output_lost", "Azure deleted the batch's output before it was copied", FailedOutcome
	case p.AzureStatus == batchapi.StatusExpired:
		return "batch_expired", "the batch's completion window ended before this request ran", ExpiredOutcome
	case p.AzureStatus == batchapi.StatusCancelled:
		return "batch_cancelled", "the job was cancelled before this request ran", CancelledOutcome
	case p.AzureStatus == batchapi.StatusFailed:
		code := "batch_failed"
		if len(p.Errors) > 0 && p.Errors[0].Code != "" {
			code, message = p.Errors[0].Code, clipMessage(p.Errors[0].Message)
		}
		return code, message, FailedOutcome
	}
	return "missing_from_output", "Azure's output has no line for this request", FailedOutcome
}

// reconcile compares the lines read with Azure's request_counts.
func reconcile(p *Part, sum *partSum) string {
	rc := p.RequestCounts
	var msg string
	if !p.OutputLost && rc.Total > 0 && (sum.lines[0] != rc.Completed || sum.lines[1] != rc.Failed) {
		msg = fmt.Sprintf("output has %d lines and errors %d; Azure counts %d completed and %d failed of %d",
			sum.lines[0], sum.lines[1], rc.Completed, rc.Failed, rc.Total)
	}
	if sum.unattributed > 0 || sum.dup > 0 || sum.malformed > 0 {
		if msg != "" {
			msg += "; "
		}
		msg += strconv.FormatInt(sum.unattributed, 10) + " unattributed, " + strconv.FormatInt(sum.dup, 10) +
			" duplicate and " + strconv.FormatInt(sum.malformed, 10) + " unreadable lines"
	}
	return msg
}

// record writes the part's usage to the ledger under a key derived from
// the job and the part.
func (s *Service) record(ctx context.Context, j *Job, p *Part, u Usage) error {
	e := ledger.Entry{Tenant: j.Tenant, Month: j.Month(), Path: ledger.Batch, Unit: LedgerUnit(j.ID, p.Index),
		Alias: j.Alias, Deployment: p.Deployment, Usage: ledger.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
			CachedTokens: u.CachedTokens, ReasoningTokens: u.ReasoningTokens, Requests: u.Requests, Refusals: u.Refusals}}
	if err := e.Estimate(s.o.Catalog); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("no price for the batch usage; recorded without a cost")
	}
	if err := s.o.Ledger.Record(ctx, e); err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	return nil
}

// LedgerUnit is the ledger unit of a job's part: the same on every harvest.
func LedgerUnit(jobID string, part int) string {
	return "batch:" + jobID + "/part-" + strconv.Itoa(part)
}
