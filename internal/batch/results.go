package batch

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/offpath/offpath/internal/batchfile"
)

// ResultLine is one line of a job's results file: one per item, whatever
// became of it. Answer is the model's text; it is never logged.
type ResultLine struct {
	ItemID       string       `json:"item_id"`
	Outcome      Outcome      `json:"outcome"`
	Answer       string       `json:"answer,omitempty"`
	FinishReason string       `json:"finish_reason,omitempty"`
	RefusedBy    string       `json:"refused_by,omitempty"`
	Categories   []string     `json:"categories,omitempty"`
	Error        *ResultError `json:"error,omitempty"`
	Usage        *ResultUsage `json:"usage,omitempty"`
	Part         int          `json:"part"`
	Line         int          `json:"line"`
	// Source is SourceSync for an item the deadline fallback answered
	// (empty: the batch).
	Source string `json:"source,omitempty"`
}

// ResultError says why an item failed, expired or was cancelled.
type ResultError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// ResultUsage is an item's usage as Azure reported it.
type ResultUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	CachedTokens     int64 `json:"cached_tokens,omitempty"`
	ReasoningTokens  int64 `json:"reasoning_tokens,omitempty"`
}

// A results file is the JSON lines of a part's ResultLines, one per item,
// gzip-compressed: a third of the bytes to store and to read back, which
// is most of what a harvest costs beyond copying Azure's files. Files
// written before compression are plain JSON lines; OpenResultsFile reads
// both.

// resultWriter encodes result lines into a results file.
type resultWriter struct {
	gz  *gzip.Writer
	bw  *bufio.Writer
	enc *json.Encoder
}

func newResultWriter(w io.Writer) *resultWriter {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level: no error
	bw := bufio.NewWriterSize(gz, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &resultWriter{gz: gz, bw: bw, enc: enc}
}

func (r *resultWriter) write(l *ResultLine) error {
	if err := r.enc.Encode(l); err != nil {
		return fmt.Errorf("write result line: %w", err)
	}
	return nil
}

// close writes what is buffered and ends the compressed stream; the
// underlying writer stays open.
func (r *resultWriter) close() error {
	if err := r.bw.Flush(); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	if err := r.gz.Close(); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// OpenResultsFile wraps the body of a stored results file so that it
// reads as JSON lines, compressed or not (a JSON line never starts with
// gzip's magic bytes). Closing it closes body.
func OpenResultsFile(body io.ReadCloser) (io.ReadCloser, error) {
	br := bufio.NewReaderSize(body, 64<<10)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			body.Close()
			return nil, fmt.Errorf("read results: %w", err)
		}
		r = gz
	}
	return struct {
		io.Reader
		io.Closer
	}{r, body}, nil
}

// openResults opens a stored results file as JSON lines.
func (s *Service) openResults(ctx context.Context, blob string) (io.ReadCloser, error) {
	body, _, err := s.o.Blobs.Open(ctx, s.o.Containers.Results, blob)
	if err != nil {
		return nil, fmt.Errorf("open results %s: %w", blob, err)
	}
	return OpenResultsFile(body)
}

// outcomeOf maps a parsed output line to an item outcome: Azure reports
// requests its window or a cancellation cut off as error lines.
func outcomeOf(res *batchfile.Result) Outcome {
	switch res.Outcome {
	case batchfile.OK:
		return OK
	case batchfile.Refused:
		return Refused
	}
	switch res.Code {
	case "batch_expired":
		return ExpiredOutcome
	case "batch_cancelled", "cancelled":
		return CancelledOutcome
	}
	return FailedOutcome
}

// resultOf renders a parsed line for the item it belongs to.
func resultOf(res *batchfile.Result, itemID string, part, line int, o Outcome) ResultLine {
	l := ResultLine{ItemID: itemID, Outcome: o, Answer: res.Text, FinishReason: res.FinishReason,
		RefusedBy: res.RefusedBy, Categories: res.Categories, Part: part, Line: line}
	if res.Code != "" || o == FailedOutcome {
		l.Error = &ResultError{Code: res.Code, Message: clipMessage(res.Message)}
		if l.Error.Code == "" {
			l.Error.Code = fmt.Sprintf("http_%d", res.StatusCode)
		}
	}
	if u := res.Usage; !u.IsZero() {
		l.Usage = &ResultUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens(),
			CachedTokens: u.CachedTokens, ReasoningTokens: u.ReasoningTokens}
	}
	return l
}

func clipMessage(s string) string {
	if len(s) > 500 {
		return s[:500] + "…"
	}
	return s
}
