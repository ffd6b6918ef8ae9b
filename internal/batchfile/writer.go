package batchfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Azure's per-file limits for Global Batch input uploaded to the resource.
const (
	// DefaultMaxBytes is 200 MB, read as decimal megabytes so that it holds
	// whichever way Azure counts.
	DefaultMaxBytes = 200_000_000
	// DefaultMaxLines is 100,000 requests per file (too_many_tasks).
	DefaultMaxLines = 100_000
	// DefaultURL is the route of every line. The classic 2024/2025 APIs and
	// the v1 API both accept it; the v1 API's documentation spells it
	// "/v1/chat/completions", which Azure accepts too.
	DefaultURL = "/chat/completions"
)

// Limits bound one part. Zero fields take Azure's defaults.
type Limits struct {
	MaxBytes int64
	MaxLines int
}

// WriterConfig configures a Writer.
type WriterConfig struct {
	// Job is offpath's short job id, [A-Za-z0-9_-]{1,32}; it starts every
	// custom_id.
	Job string
	// Deployment is the global-batch deployment written as body.model on
	// every line (Azure requires one deployment per file).
	Deployment string
	// URL is the route of every line. Default DefaultURL.
	URL string
	// Limits split the output into parts. Default Azure's limits.
	Limits Limits
}

// PartOpener returns where part n (from 0) is written: its JSONL input and
// its index. The writer buffers both and never closes them; it calls the
// opener only when a line is about to be written to part n, so no empty part
// exists.
type PartOpener func(n int) (input, index io.Writer, err error)

// Part describes one finished input file.
type Part struct {
	Index int
	Lines int
	Bytes int64
	// EstimatedTokens is what the part will count against the enqueued-token
	// quota, as Azure estimates it from characters rather than a tokenizer:
	// ceil(bytes / 4). UTF-8 bytes are never fewer than characters, so this
	// errs high, the safe side for admission.
	EstimatedTokens int64
}

// EstimateTokens is the enqueued-token estimate of a file of n bytes.
func EstimateTokens(n int64) int64 { return (n + 3) / 4 }

// Writer streams items into batch input parts. It is not safe for
// concurrent use. After a write error it stays failed.
type Writer struct {
	cfg   WriterConfig
	open  PartOpener
	parts []Part
	in    *bufio.Writer
	idx   *bufio.Writer
	line  []byte
	entry []byte
	err   error
}

// NewWriter checks cfg and returns a writer; nothing is opened yet.
func NewWriter(cfg WriterConfig, open PartOpener) (*Writer, error) {
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	if cfg.Limits.MaxBytes == 0 {
		cfg.Limits.MaxBytes = DefaultMaxBytes
	}
	if cfg.Limits.MaxLines == 0 {
		cfg.Limits.MaxLines = DefaultMaxLines
	}
	var errs []error
	if err := ValidateJobID(cfg.Job); err != nil {
		errs = append(errs, fmt.Errorf("job: %w", err))
	}
	if cfg.Deployment == "" || strings.ContainsAny(cfg.Deployment, "\"\\\n") {
		errs = append(errs, errors.New("deployment: required, plain name"))
	}
	if cfg.Limits.MaxBytes < 0 || cfg.Limits.MaxLines < 0 || cfg.Limits.MaxLines > maxIndex+1 {
		errs = append(errs, fmt.Errorf("limits: max lines must be within [1, %d] and max bytes positive", maxIndex+1))
	}
	if open == nil {
		errs = append(errs, errors.New("part opener: required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("batch writer: %w", err)
	}
	return &Writer{cfg: cfg, open: open}, nil
}

// Add writes the request line of it and its index entry, starting a new part
// first when the line would not fit the current one. It returns the line's
// Ref. An error wrapping ErrInvalidItem leaves the writer usable; any other
// error is a write error and is returned by every later call.
func (w *Writer) Add(it Item) (Ref, error) {
	if w.err != nil {
		return Ref{}, w.err
	}
	if err := it.validate(); err != nil {
		return Ref{}, err
	}
	part, line := w.position()
	ref, err := w.encode(part, line, &it)
	if err != nil {
		return Ref{}, err
	}
	if n := int64(len(w.line)); n > w.cfg.Limits.MaxBytes {
		return Ref{}, fmt.Errorf("%w: line of %d bytes exceeds the %d-byte file limit", ErrInvalidItem, n, w.cfg.Limits.MaxBytes)
	}
	if ref.Part == len(w.parts) { // the line needs a new part
		if err := w.startPart(ref.Part); err != nil {
			w.err = err
			return Ref{}, err
		}
	}
	if err := w.emit(); err != nil {
		w.err = err
		return Ref{}, err
	}
	return ref, nil
}

// position returns where the next line goes by line count: the current part
// when it has room for one more line, else the next part. encode moves the
// line on when its bytes do not fit.
func (w *Writer) position() (part, line int) {
	if len(w.parts) == 0 {
		return 0, 0
	}
	cur := &w.parts[len(w.parts)-1]
	if cur.Lines >= w.cfg.Limits.MaxLines {
		return len(w.parts), 0
	}
	return cur.Index, cur.Lines
}

// encode renders the line at (part, line) into w.line; when it does not fit
// the current part's bytes it is re-rendered as the first line of the next.
func (w *Writer) encode(part, line int, it *Item) (Ref, error) {
	for {
		ref, err := NewRef(w.cfg.Job, part, line, it.Tenant, it.ItemID)
		if err != nil {
			return Ref{}, fmt.Errorf("%w: %w", ErrInvalidItem, err)
		}
		if w.line, err = appendLine(w.line[:0], ref.String(), w.cfg.URL, w.cfg.Deployment, it); err != nil {
			return Ref{}, err
		}
		if part < len(w.parts) && w.parts[part].Bytes+int64(len(w.line)) > w.cfg.Limits.MaxBytes {
			part, line = len(w.parts), 0
			continue
		}
		w.entry = appendIndexLine(w.entry[:0], it.Tenant, it.ItemID)
		return ref, nil
	}
}

func (w *Writer) startPart(n int) error {
	if err := w.flush(); err != nil {
		return err
	}
	in, idx, err := w.open(n)
	if err != nil {
		return fmt.Errorf("open part %d: %w", n, err)
	}
	if in == nil || idx == nil {
		return fmt.Errorf("open part %d: opener returned a nil writer", n)
	}
	if w.in == nil {
		w.in, w.idx = bufio.NewWriterSize(in, 256<<10), bufio.NewWriterSize(idx, 64<<10)
	} else {
		w.in.Reset(in)
		w.idx.Reset(idx)
	}
	if _, err := w.idx.Write(appendIndexHeader(nil, w.cfg.Job, n)); err != nil {
		return fmt.Errorf("write index of part %d: %w", n, err)
	}
	w.parts = append(w.parts, Part{Index: n})
	return nil
}

func (w *Writer) emit() error {
	cur := &w.parts[len(w.parts)-1]
	if _, err := w.in.Write(w.line); err != nil {
		return fmt.Errorf("write part %d: %w", cur.Index, err)
	}
	if _, err := w.idx.Write(w.entry); err != nil {
		return fmt.Errorf("write index of part %d: %w", cur.Index, err)
	}
	cur.Lines++
	cur.Bytes += int64(len(w.line))
	cur.EstimatedTokens = EstimateTokens(cur.Bytes)
	return nil
}

func (w *Writer) flush() error {
	if w.in == nil {
		return nil
	}
	if err := w.in.Flush(); err != nil {
		return fmt.Errorf("flush part: %w", err)
	}
	if err := w.idx.Flush(); err != nil {
		return fmt.Errorf("flush index: %w", err)
	}
	return nil
}

// Parts returns the parts started so far; the last may still grow.
func (w *Writer) Parts() []Part { return append([]Part(nil), w.parts...) }

// Close flushes the current part and returns every part. It does not close
// the writers the opener returned.
func (w *Writer) Close() ([]Part, error) {
	if w.err != nil {
		return w.Parts(), w.err
	}
	if err := w.flush(); err != nil {
		w.err = err
		return w.Parts(), err
	}
	w.err = errors.New("batch writer: closed")
	return w.Parts(), nil
}
