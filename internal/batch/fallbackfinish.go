package batch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/rs/zerolog"
)

// finishFallback writes the part's results, the batch's lines with those
// the fallback answered replaced, each item once, and the fallback's
// answers as one file of batch output lines ({part}.fallback.jsonl, in
// line order), recorded among the part's copies (Source "sync") so that
// whoever reads the part's output as Azure's files (package openaiapi)
// finds them there; then marks the part harvested, and lists the kept
// answers ({part}.sync.*) among the job's CleanupBlobs, which the poll's
// cleanup deletes, tick after tick until it can.
func (s *Service) finishFallback(ctx context.Context, j Job, i int, owner string, items int, fromBatch int64) (Job, error) {
	p := j.Parts[i]
	name := partBlob(&j, p.Index, "combined.jsonl.gz")
	w, err := s.o.Blobs.Create(ctx, s.o.Containers.Results, name, nil)
	if err != nil {
		return j, err
	}
	ok := false
	defer func() {
		if !ok {
			w.Abort(errors.New("combine failed"))
		}
	}()
	answersName := partBlob(&j, p.Index, "fallback.jsonl")
	aw, err := s.o.Blobs.Create(ctx, s.o.Containers.Results, answersName, nil)
	if err != nil {
		return j, err
	}
	defer func() {
		if !ok {
			aw.Abort(errors.New("combine failed"))
		}
	}()
	out, abw := newResultWriter(w), bufio.NewWriterSize(aw, 256<<10)
	var counts Counts
	err = s.eachResult(ctx, p.ResultsBlob, func(l *ResultLine) error {
		if rerun(l.Outcome) {
			kept, err := s.keptAnswer(ctx, &j, &p, l.Line)
			if err != nil {
				return err
			}
			if kept == nil {
				return fmt.Errorf("line %d has no kept answer", l.Line)
			}
			abw.Write(kept)
			if err := abw.WriteByte('\n'); err != nil {
				return fmt.Errorf("write answers: %w", err)
			}
			res, o := readAnswer(kept)
			if res == nil {
				*l = ResultLine{ItemID: l.ItemID, Outcome: FailedOutcome, Part: l.Part, Line: l.Line,
					Error: &ResultError{Code: "unreadable_output", Message: "the kept answer cannot be read"}}
			} else {
				*l = resultOf(res, l.ItemID, l.Part, l.Line, o)
			}
			l.Source = SourceSync
		}
		counts.inc(l.Outcome)
		return out.write(l)
	})
	if err != nil {
		return j, err
	}
	if err := out.close(); err != nil {
		return j, err
	}
	if err := abw.Flush(); err != nil {
		return j, fmt.Errorf("write answers: %w", err)
	}
	ok = true
	if err := w.Close(); err != nil {
		aw.Abort(err)
		return j, err
	}
	if err := aw.Close(); err != nil {
		return j, err
	}
	answers := FileCopy{Blob: answersName, Bytes: aw.Size(), SHA256: aw.SHA256(), Source: SourceSync}
	j, err = s.update(ctx, j, s.holding(owner, func(j *Job) error {
		q := &j.Parts[i]
		if q.Status != PartFallback {
			return errSkip
		}
		now := s.now()
		q.Status, q.Counts, q.ResultsBlob = PartHarvested, counts, name
		q.Fallback.Items, q.Fallback.Done, q.Fallback.FromBatch, q.Fallback.FinishedAt = items, items, fromBatch, now
		q.Copies = append(slices.DeleteFunc(q.Copies, func(c FileCopy) bool { return c.Source == SourceSync }), answers)
		if kept := partBlob(j, p.Index, "sync."); !slices.Contains(j.CleanupBlobs, kept) {
			j.CleanupBlobs = append(j.CleanupBlobs, kept)
		}
		if allHarvested(j) {
			j.HarvestedAt = now
		}
		return nil
	}))
	if err != nil {
		return j, err
	}
	f := j.Parts[i].Fallback
	zerolog.Ctx(ctx).Info().Int("part", i).Int("items", f.Items).Int64("from_batch", f.FromBatch).
		Int64("prompt_tokens", f.Usage.PromptTokens).Int64("completion_tokens", f.Usage.CompletionTokens).
		Dur("took", f.FinishedAt.Sub(f.StartedAt)).Msg("deadline fallback finished")
	return j, nil
}
