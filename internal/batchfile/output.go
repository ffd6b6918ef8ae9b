package batchfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/lines"
)

// Outcome is how one request of a batch ended.
type Outcome int

// Outcomes of a line. A refusal is a result (recorded and metered, never
// retried), not a failure.
const (
	OK Outcome = iota + 1
	Refused
	Failed
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Refused:
		return "refused"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// Who refused a request.
const (
	RefusedPrompt     = "prompt"     // the prompt was filtered: HTTP 400 content_filter
	RefusedCompletion = "completion" // the answer was filtered: 200, finish_reason content_filter
)

// Result is one line of an output or error file.
type Result struct {
	// Line is the 1-based line number in the file.
	Line     int
	CustomID string
	Outcome  Outcome
	// StatusCode is response.status_code; 0 when the line has a top-level
	// error instead of a response.
	StatusCode int
	RequestID  string
	// Code and Message describe a failure or a prompt refusal.
	Code    string
	Message string
	// RefusedBy is RefusedPrompt or RefusedCompletion for refusals.
	RefusedBy string
	// Categories are the content-filter categories marked filtered.
	Categories []string
	// FinishReason and Text are the first choice's (or, for the Responses
	// API, the status and the concatenated output text).
	FinishReason string
	Text         string
	Usage        ledger.Usage
}

// ErrMalformedLine is wrapped by every LineError.
var ErrMalformedLine = errors.New("malformed batch output line")

// LineError reports a line that cannot be read as a result. CustomID is set
// when the line had one, so the caller can still mark that item. Reading may
// go on after it.
type LineError struct {
	Line     int
	CustomID string
	Reason   string
}

func (e *LineError) Error() string {
	if e.CustomID != "" {
		return fmt.Sprintf("output line %d (custom_id %q): %s", e.Line, e.CustomID, e.Reason)
	}
	return fmt.Sprintf("output line %d: %s", e.Line, e.Reason)
}

// Is makes errors.Is(err, ErrMalformedLine) hold.
func (e *LineError) Is(target error) bool { return target == ErrMalformedLine }

// DefaultMaxLineBytes bounds one output line. A chat completion with a long
// answer is tens of kilobytes; a longer line is reported and skipped.
const DefaultMaxLineBytes = 16 << 20

// Reader streams the lines of an output or error file. It holds one line in
// memory at a time.
type Reader struct {
	br      *bufio.Reader
	dec     *lineDecoder
	buf     []byte
	line    int
	maxLine int
}

// NewReader reads r. maxLineBytes <= 0 means DefaultMaxLineBytes.
func NewReader(r io.Reader, maxLineBytes int) *Reader {
	if maxLineBytes <= 0 {
		maxLineBytes = DefaultMaxLineBytes
	}
	return &Reader{br: bufio.NewReaderSize(r, 256<<10), dec: newLineDecoder(), maxLine: maxLineBytes}
}

// Next returns the next result. It returns a *LineError for a line that
// cannot be read (call Next again to go on), io.EOF at the end, and any
// other error when reading the stream failed. Blank lines are skipped.
func (r *Reader) Next() (Result, error) {
	for {
		var err error
		r.buf, err = lines.Read(r.br, r.buf, r.maxLine)
		if errors.Is(err, io.EOF) {
			return Result{}, io.EOF
		}
		r.line++
		if errors.Is(err, lines.ErrTooLong) {
			return Result{}, &LineError{Line: r.line, Reason: fmt.Sprintf("longer than %d bytes", r.maxLine)}
		}
		if err != nil {
			return Result{}, fmt.Errorf("read output line %d: %w", r.line, err)
		}
		if len(r.buf) == 0 {
			continue
		}
		return parseLine(r.dec, r.buf, r.line)
	}
}
