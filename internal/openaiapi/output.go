package openaiapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/lines"
	"github.com/offpath/offpath/internal/object"
)

// The two files of a harvested job.
type fileKind string

const (
	kindOutput fileKind = "output"
	kindErrors fileKind = "errors"
)

func outputFileIDOf(jobID string, kind fileKind) string {
	if kind == kindOutput {
		return filePrefix + jobID + outputSuffix
	}
	return filePrefix + jobID + errorsSuffix
}

// outputFileID parses a job's output or error file id.
func outputFileID(id string) (jobID string, kind fileKind, ok bool) {
	rest, found := strings.CutPrefix(id, filePrefix)
	if !found {
		return "", "", false
	}
	if j, found := strings.CutSuffix(rest, outputSuffix); found && batch.ValidJobID(j) {
		return j, kindOutput, true
	}
	if j, found := strings.CutSuffix(rest, errorsSuffix); found && batch.ValidJobID(j) {
		return j, kindErrors, true
	}
	return "", "", false
}

// outputBlob is where a job's file in Azure's format is kept, next to
// the control plane's copies.
func outputBlob(tenantID, jobID string, kind fileKind) string {
	return tenantID + "/" + jobID + "/openai/" + string(kind) + ".jsonl"
}

type outputFileInfo struct {
	blob   string
	object fileObject
}

// outputFile returns a harvested job's output or error file, writing it
// from offpath's copies the first time it is asked for: Azure's lines with
// the caller's custom_ids. Azure's own files may be long gone.
func (s *Server) outputFile(ctx context.Context, tenantID, jobID string, kind fileKind) (outputFileInfo, error) {
	j, err := s.o.Batches.Get(ctx, tenantID, jobID)
	if err != nil {
		return outputFileInfo{}, err
	}
	if j.State != batch.Harvested {
		return outputFileInfo{}, notFound("file")
	}
	created := j.HarvestedAt.Unix()
	var expiresAt int64
	if v, err := strconv.ParseInt(j.Attributes[attrOutputExpiry], 10, 64); err == nil && v > 0 {
		expiresAt = created + v
	}
	if s.expired(expiresAt) {
		return outputFileInfo{}, notFound("file")
	}
	name := outputBlob(tenantID, jobID, kind)
	info, err := s.o.Blobs.Stat(ctx, s.o.Containers.Results, name)
	if errors.Is(err, object.ErrNotFound) {
		if err = s.markExpiry(ctx, expiresAt, tenantID, outputFileIDOf(jobID, kind)); err == nil {
			info, err = s.writeOutput(ctx, &j, kind, name)
		}
	}
	if err != nil {
		return outputFileInfo{}, err
	}
	o := fileObject{ID: outputFileIDOf(jobID, kind), Object: "file", Bytes: info.Size, CreatedAt: created,
		Filename: string(kind) + ".jsonl", Purpose: "batch_output", Status: "processed"}
	if expiresAt > 0 {
		o.ExpiresAt = &expiresAt
	}
	return outputFileInfo{blob: name, object: o}, nil
}

// writeOutput writes the job's file of kind: for the output, every line of
// Azure's output files; for the errors, every line of its error files, then
// a line for each request Azure never answered (cancelled, expired, lost),
// with the code the harvest gave it.
func (s *Server) writeOutput(ctx context.Context, j *batch.Job, kind fileKind, name string) (object.Info, error) {
	w, err := s.o.Blobs.Create(ctx, s.o.Containers.Results, name, nil)
	if err != nil {
		return object.Info{}, err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	for i := range j.Parts {
		if err := s.writePart(ctx, j, &j.Parts[i], kind, bw); err != nil {
			w.Abort(err)
			return object.Info{}, fmt.Errorf("%s file of job %s, part %d: %w", kind, j.ID, i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		w.Abort(err)
		return object.Info{}, err
	}
	if err := w.Close(); err != nil {
		return object.Info{}, err
	}
	return object.Info{Size: w.Size()}, nil
}

func (s *Server) writePart(ctx context.Context, j *batch.Job, p *batch.Part, kind fileKind, out *bufio.Writer) error {
	// The index is read beside the copies, never whole: its memory is
	// the reader's window, whatever the number of lines.
	idx := p.IndexReader(j.ID, func(blob string, off int64) (io.ReadCloser, error) {
		return s.o.Blobs.OpenAt(ctx, s.o.Containers.Inputs, blob, off)
	})
	defer idx.Close()
	seen := make([]bool, p.Lines)
	for _, c := range p.Copies {
		// Azure's output and error files go whole to their kind; the
		// answers of the deadline fallback line by line, as Azure sorts
		// its lines: a 200 to the output, anything else to the errors.
		var write func(status int) bool
		switch isErrors := c.AzureFileID == p.ErrorFileID; {
		case c.Source == batch.SourceSync:
			write = func(status int) bool { return (status == http.StatusOK) == (kind == kindOutput) }
		case isErrors == (kind == kindErrors):
			write = func(int) bool { return true }
		case kind == kindOutput:
			continue // the output needs no knowledge of the error file
		default:
			write = func(int) bool { return false }
		}
		if err := s.copyLines(ctx, c.Blob, idx, seen, write, out); err != nil {
			return err
		}
	}
	if kind == kindOutput || p.ResultsBlob == "" {
		return nil
	}
	return s.writeUnanswered(ctx, p.ResultsBlob, seen, out)
}

// copyLines reads one copied file of batch output lines, marking each
// line's request seen and, if write says so for its status code, writing
// it with the caller's custom_id.
func (s *Server) copyLines(ctx context.Context, blob string, idx *batchfile.IndexReader, seen []bool, write func(status int) bool, out *bufio.Writer) error {
	body, _, err := s.o.Blobs.Open(ctx, s.o.Containers.Results, blob)
	if err != nil {
		return fmt.Errorf("open copy: %w", err)
	}
	defer body.Close()
	br := bufio.NewReaderSize(body, 256<<10)
	var buf []byte
	for {
		line, err := lines.Read(br, buf, 64<<20)
		buf = line
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read copy: %w", err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var head struct {
			CustomID string `json:"custom_id"`
			Response struct {
				StatusCode int `json:"status_code"`
			} `json:"response"`
		}
		_ = json.Unmarshal(line, &head)
		keep := write(head.Response.StatusCode)
		at, e, rerr := idx.Resolve(head.CustomID)
		switch {
		case rerr == nil:
			if at < len(seen) {
				seen[at] = true
			}
			if keep {
				line = replaceCustomID(line, head.CustomID, e.ItemID)
			}
		case !errors.Is(rerr, batchfile.ErrNotIndexed) && !errors.Is(rerr, batchfile.ErrCheckMismatch) && !errors.Is(rerr, batchfile.ErrCustomID):
			return fmt.Errorf("index: %w", rerr) // unreadable, not a foreign line
		}
		if !keep {
			continue
		}
		out.Write(line)
		if err := out.WriteByte('\n'); err != nil {
			return fmt.Errorf("write line: %w", err)
		}
	}
}

// replaceCustomID puts the caller's id where offpath's positional one is:
// offpath's ids are plain [A-Za-z0-9._-], so they appear verbatim.
func replaceCustomID(line []byte, positional, callers string) []byte {
	quoted, err := jsonString(callers)
	if err != nil {
		return line
	}
	return bytes.Replace(line, []byte(`"`+positional+`"`), quoted, 1)
}

func jsonString(s string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// unansweredLine is an error-file line for a request Azure never ran.
type unansweredLine struct {
	ID       string            `json:"id"`
	CustomID string            `json:"custom_id"`
	Response *struct{}         `json:"response"`
	Error    batch.ResultError `json:"error"`
}

// writeUnanswered writes, from the harvest's per-item results, a line for
// each request no copied file mentions.
func (s *Server) writeUnanswered(ctx context.Context, resultsBlob string, seen []bool, out *bufio.Writer) error {
	stored, _, err := s.o.Blobs.Open(ctx, s.o.Containers.Results, resultsBlob)
	if err != nil {
		return fmt.Errorf("open results: %w", err)
	}
	body, err := batch.OpenResultsFile(stored)
	if err != nil {
		return err
	}
	defer body.Close()
	dec := json.NewDecoder(body)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for {
		var rl batch.ResultLine
		if err := dec.Decode(&rl); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read results: %w", err)
		}
		if rl.Line < len(seen) && seen[rl.Line] {
			continue
		}
		l := unansweredLine{ID: "batch_req_" + strconv.Itoa(rl.Part) + "_" + strconv.Itoa(rl.Line), CustomID: rl.ItemID}
		if rl.Error != nil {
			l.Error = *rl.Error
		}
		if err := enc.Encode(&l); err != nil {
			return fmt.Errorf("write line: %w", err)
		}
	}
}
