package batch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/object"
)

// partSum is what reading a part's copies found.
type partSum struct {
	counts                       Counts
	usage                        ledger.Usage
	lines                        [2]int64 // lines read per file kind (output, errors)
	unattributed, dup, malformed int64
}

// partFile is one of a part's output and error files, to be read once.
// open returns its bytes and done, which the reader calls with the error
// that stopped it (nil at the end of the file) and which says whether what
// was read is whole; what was read whole may leave a copy to commit.
type partFile struct {
	kind int // 0 output, 1 errors
	open func() (r io.Reader, done func(readErr error) (*pendingCopy, error), err error)
}

// pendingCopy is a copy of an Azure file read whole, stored once it is
// committed.
type pendingCopy struct {
	w    object.Writer
	copy FileCopy // without its size and checksum until committed
}

// errEmptyFile aborts the copy of an empty file.
var errEmptyFile = errors.New("empty file: not copied")

// azureFiles are the part's files at Azure, each copied into the results
// container as it is read, its SHA-256 computed on the way; a copy is
// committed only once its file was read to the end, and added to copies.
// An empty file is not copied.
func (s *Service) azureFiles(ctx context.Context, j *Job, p *Part) []partFile {
	var files []partFile
	for k, f := range []struct{ id, kind string }{{p.OutputFileID, "output"}, {p.ErrorFileID, "errors"}} {
		if f.id == "" {
			continue
		}
		name := partBlob(j, p.Index, p.BatchID+"."+f.kind+".jsonl")
		files = append(files, partFile{kind: k, open: func() (io.Reader, func(error) (*pendingCopy, error), error) {
			body, err := s.o.Azure.OpenFileContent(ctx, f.id)
			if err != nil {
				return nil, nil, err
			}
			w, err := s.o.Blobs.Create(ctx, s.o.Containers.Results, name, map[string]string{"azure_file_id": f.id})
			if err != nil {
				body.Close()
				return nil, nil, err
			}
			done := func(readErr error) (*pendingCopy, error) {
				body.Close()
				if readErr != nil {
					w.Abort(readErr)
					return nil, fmt.Errorf("copy Azure file %s: %w", f.id, readErr)
				}
				if w.Size() == 0 {
					// An empty file (Azure's error file when nothing
					// failed) holds nothing to keep: no copy, no request.
					w.Abort(errEmptyFile)
					return nil, nil
				}
				return &pendingCopy{w: w, copy: FileCopy{AzureFileID: f.id, Blob: name}}, nil
			}
			return io.TeeReader(body, w), done, nil
		}})
	}
	return files
}

// copiedFiles are the copies an earlier harvest recorded, each checked
// against its recorded SHA-256.
func (s *Service) copiedFiles(ctx context.Context, p *Part) []partFile {
	var files []partFile
	for _, c := range p.Copies {
		kind := 0
		if c.AzureFileID == p.ErrorFileID {
			kind = 1
		}
		files = append(files, partFile{kind: kind, open: func() (io.Reader, func(error) (*pendingCopy, error), error) {
			body, _, err := s.o.Blobs.Open(ctx, s.o.Containers.Results, c.Blob)
			if err != nil {
				return nil, nil, fmt.Errorf("open copy %s: %w", c.Blob, err)
			}
			h := sha256.New()
			done := func(readErr error) (*pendingCopy, error) {
				body.Close()
				if readErr != nil {
					return nil, fmt.Errorf("read copy %s: %w", c.Blob, readErr)
				}
				if got := hex.EncodeToString(h.Sum(nil)); got != c.SHA256 {
					return nil, fmt.Errorf("copy %s: checksum %s, recorded %s", c.Blob, got, c.SHA256)
				}
				return nil, nil
			}
			return io.TeeReader(body, h), done, nil
		}})
	}
	return files
}

// parse reads each of the part's files once, joins every line to its item
// through the part's index (read beside the files, never whole), writes
// the per-item results file and sums counts and usage. Items no file
// mentions get the outcome the part's end implies. A file Azure no longer
// has marks the part's output lost. The copies of Azure's files and the
// results file are committed together, and only when every file was read
// whole; the copies are returned, in the files' order.
func (s *Service) parse(ctx context.Context, j *Job, p *Part, files []partFile) (partSum, []FileCopy, error) {
	var sum partSum
	idx := s.indexReader(ctx, j, p)
	defer idx.Close()
	w, err := s.o.Blobs.Create(ctx, s.o.Containers.Results, resultsBlob(j, p), nil)
	if err != nil {
		return sum, nil, err
	}
	var pending []*pendingCopy
	ok := false
	defer func() {
		if !ok {
			cause := errors.New("harvest failed")
			w.Abort(cause)
			for _, c := range pending {
				c.w.Abort(cause)
			}
		}
	}()
	out := newResultWriter(w)
	seen := make([]bool, p.Lines)
	for _, f := range files {
		r, done, err := f.open()
		if errors.Is(err, ErrAzureNotFound) {
			p.OutputLost = true
			continue
		}
		if err != nil {
			return sum, nil, err
		}
		c, err := done(parseFile(r, f.kind, idx, p, seen, out, &sum))
		if err != nil {
			return sum, nil, err
		}
		if c != nil {
			pending = append(pending, c)
		}
	}
	if err := writeMissing(s.indexReader(ctx, j, p), p, seen, out, &sum); err != nil {
		return sum, nil, err
	}
	if err := out.close(); err != nil {
		return sum, nil, err
	}
	ok = true
	// Each commit is a request or two of its own: they go at once.
	errs := make([]error, len(pending)+1)
	var wg sync.WaitGroup
	for i, c := range pending {
		wg.Go(func() { errs[i] = c.w.Close() })
	}
	errs[len(pending)] = w.Close()
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return sum, nil, err
	}
	var copies []FileCopy
	for _, c := range pending {
		c.copy.Bytes, c.copy.SHA256 = c.w.Size(), c.w.SHA256()
		copies = append(copies, c.copy)
	}
	return sum, copies, nil
}

// indexReader reads the part's index from platform storage.
func (s *Service) indexReader(ctx context.Context, j *Job, p *Part) *batchfile.IndexReader {
	return p.IndexReader(j.ID, func(blob string, off int64) (io.ReadCloser, error) {
		return s.o.Blobs.OpenAt(ctx, s.o.Containers.Inputs, blob, off)
	})
}

// IndexReader reads the index of part p of job through openAt, which
// opens the index blob (in the inputs container) from a byte offset. A
// part without an index blob reads as an empty index.
func (p *Part) IndexReader(job string, openAt func(blob string, offset int64) (io.ReadCloser, error)) *batchfile.IndexReader {
	return batchfile.NewIndexReader(job, p.Index, func(off int64) (io.ReadCloser, error) {
		if p.IndexBlob == "" {
			return io.NopCloser(strings.NewReader("")), nil
		}
		return openAt(p.IndexBlob, off)
	})
}

// parseFile reads one file into the results.
func parseFile(r io.Reader, kind int, idx *batchfile.IndexReader, p *Part, seen []bool, out *resultWriter, sum *partSum) error {
	rd := batchfile.NewReader(r, 0)
	for {
		res, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		var le *batchfile.LineError
		if errors.As(err, &le) {
			sum.lines[kind]++
			line, e, ok, err := resolve(idx, le.CustomID, seen)
			if err != nil {
				return err
			}
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
			return err
		}
		sum.lines[kind]++
		line, e, ok, err := resolve(idx, res.CustomID, seen)
		if err != nil {
			return err
		}
		if !ok {
			sum.unattributed++
			continue
		}
		if seen[line] {
			sum.dup++
			continue
		}
		seen[line] = true
		o := Meter(&sum.usage, &res)
		sum.counts.inc(o)
		l := resultOf(&res, e.ItemID, p.Index, line, o)
		if err := out.write(&l); err != nil {
			return err
		}
	}
}

// writeMissing writes the results of the items no file mentioned, reading
// the index again from its start (once, and only if some are missing).
func writeMissing(idx *batchfile.IndexReader, p *Part, seen []bool, out *resultWriter, sum *partSum) error {
	defer idx.Close()
	code, msg, missing := missingOutcome(p)
	for line := range seen {
		if seen[line] {
			continue
		}
		e, found, err := idx.Lookup(line)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("index of part %d has no line %d", p.Index, line)
		}
		sum.counts.inc(missing)
		if err := out.write(&ResultLine{ItemID: e.ItemID, Outcome: missing, Error: &ResultError{Code: code, Message: msg},
			Part: p.Index, Line: line}); err != nil {
			return err
		}
	}
	return nil
}

// resolve joins a custom_id to its line and index entry; ok is false for
// a custom_id that is not one of the part's lines. An error means the
// index could not be read.
func resolve(idx *batchfile.IndexReader, customID string, seen []bool) (int, batchfile.IndexEntry, bool, error) {
	if customID == "" {
		return 0, batchfile.IndexEntry{}, false, nil
	}
	line, e, err := idx.Resolve(customID)
	switch {
	case errors.Is(err, batchfile.ErrNotIndexed), errors.Is(err, batchfile.ErrCheckMismatch), errors.Is(err, batchfile.ErrCustomID):
		return 0, batchfile.IndexEntry{}, false, nil
	case err != nil:
		return 0, batchfile.IndexEntry{}, false, err
	}
	return line, e, line < len(seen), nil
}

// missingOutcome is the outcome of an item that no copied file mentions.
func missingOutcome(p *Part) (code, message string, o Outcome) {
	switch {
	case p.OutputLost:
		return "output_lost", "Azure deleted the batch's output before it was copied", FailedOutcome
	case p.AzureStatus == AzureExpired:
		return "batch_expired", "the batch's completion window ended before this request ran", ExpiredOutcome
	case p.AzureStatus == AzureCancelled:
		return "batch_cancelled", "the job was cancelled before this request ran", CancelledOutcome
	case p.AzureStatus == AzureFailed:
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
