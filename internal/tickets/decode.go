package tickets

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/offpath/offpath/internal/lines"
)

// format is how a blob holds tickets, from its extension.
type format int

const (
	unsupported format = iota
	oneJSON            // .json: one ticket
	jsonLines          // .jsonl, .ndjson: one ticket per line
)

func formatOf(name string) format {
	switch strings.ToLower(path.Ext(name)) {
	case ".json":
		return oneJSON
	case ".jsonl", ".ndjson":
		return jsonLines
	}
	return unsupported
}

// maxBadLines is how many malformed lines a .jsonl file may have before the
// rest of it is skipped in one entry.
const maxBadLines = 100

// sink receives what a file holds: valid tickets and skipped documents. An
// error from ticket stops the reading and is returned as is.
type sink interface {
	ticket(ctx context.Context, t Ticket) error
	skip(line int, id, reason string)
}

// decode reads one file of format f from r into s. It returns only errors of
// reading r and errors of s: malformed content goes to s as skips.
func decode(ctx context.Context, r io.Reader, f format, s sink) error {
	if f == jsonLines {
		return decodeLines(ctx, r, s)
	}
	doc, err := io.ReadAll(io.LimitReader(r, MaxDocumentBytes+1))
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	switch {
	case len(doc) > MaxDocumentBytes:
		s.skip(0, "", fmt.Sprintf("file too large for one ticket (over %s)", size(MaxDocumentBytes)))
		return nil
	case len(bytes.TrimSpace(doc)) == 0:
		s.skip(0, "", "empty file")
		return nil
	}
	return deliver(ctx, s, 0, doc)
}

// decodeLines reads a JSONL file line by line; only the current line is held.
func decodeLines(ctx context.Context, r io.Reader, s sink) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	bad := 0
	for line := 1; ; line++ {
		var err error
		buf, err = lines.Read(br, buf, MaxDocumentBytes)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, lines.ErrTooLong):
			s.skip(line, "", fmt.Sprintf("line too long (over %s)", size(MaxDocumentBytes)))
			bad++
		case err != nil:
			return err
		default:
			if line == 1 {
				buf = bytes.TrimPrefix(buf, bom)
			}
			if len(bytes.TrimSpace(buf)) == 0 {
				continue
			}
			ok, err := tryDeliver(ctx, s, line, buf)
			if err != nil {
				return err
			}
			if !ok {
				bad++
			}
		}
		if bad >= maxBadLines {
			s.skip(line+1, "", fmt.Sprintf("rest of the file skipped after %d malformed lines", bad))
			return nil
		}
	}
}

// deliver parses doc and hands the ticket or the skip to s.
func deliver(ctx context.Context, s sink, line int, doc []byte) error {
	_, err := tryDeliver(ctx, s, line, doc)
	return err
}

func tryDeliver(ctx context.Context, s sink, line int, doc []byte) (bool, error) {
	t, id, reason := parse(doc)
	if reason != "" {
		s.skip(line, id, reason)
		return false, nil
	}
	t.Line = line
	return true, s.ticket(ctx, t)
}
