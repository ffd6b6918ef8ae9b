// Package lines reads a stream line by line with a bound on a line's
// length and no fixed token size, as the JSONL readers (batch input and
// output files, ticket files, the simulator's batch files) need: a line
// may be far longer than bufio.Scanner's 64 KiB, and one longer than the
// bound is read past, never held whole, so that reading may go on.
package lines

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ErrTooLong reports a line above the reader's bound; the rest of the line
// has been read past and reading may go on.
var ErrTooLong = errors.New("line too long")

// Read returns the next line of r without its end of line ("\n", or
// "\r\n"), reusing buf; a last line without "\n" is returned too. A line
// may hold up to maxLen bytes besides its end of line, whichever end it
// has; a longer one is reported as ErrTooLong. At the end Read returns
// io.EOF.
func Read(r *bufio.Reader, buf []byte, maxLen int) ([]byte, error) {
	buf = buf[:0]
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > maxLen+len("\r\n") {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return buf[:0], fmt.Errorf("read line: %w", err)
			}
			return buf[:0], ErrTooLong
		}
		buf = append(buf, chunk...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil, errors.Is(err, io.EOF) && len(buf) > 0:
			if line := trimEOL(buf); len(line) <= maxLen {
				return line, nil
			}
			return buf[:0], ErrTooLong
		case errors.Is(err, io.EOF):
			return buf, io.EOF
		default:
			return buf, fmt.Errorf("read line: %w", err)
		}
	}
}

// trimEOL cuts a "\n" and then a "\r" off the end of b.
func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}
