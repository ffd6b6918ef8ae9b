package batch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/offpath/offpath/internal/batchapi"
	"github.com/offpath/offpath/internal/batchfile"
)

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
		o := sum.usage.Meter(&res)
		sum.counts.inc(o)
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
