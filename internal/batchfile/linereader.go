package batchfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ErrLineTooLong reports a line above the reader's limit; the rest of the
// line has been skipped and reading may go on.
var ErrLineTooLong = errors.New("line too long")

// readLine returns the next line of r without its "\n" (and without a "\r"
// before it), reusing buf. A last line without "\n" is returned too. Unlike
// bufio.Scanner it has no fixed token limit: a line may be up to maxLen
// bytes; a longer one is skipped and reported as ErrLineTooLong. At the end
// it returns io.EOF.
func readLine(r *bufio.Reader, buf []byte, maxLen int) ([]byte, error) {
	buf = buf[:0]
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > maxLen+1 {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return buf[:0], fmt.Errorf("read line: %w", err)
			}
			return buf[:0], ErrLineTooLong
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return trimEOL(buf), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(buf) == 0 {
				return buf, io.EOF
			}
			return trimEOL(buf), nil
		default:
			return buf, fmt.Errorf("read line: %w", err)
		}
	}
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

// ReadLine is readLine for other readers of JSONL: the next line of r
// without its end of line, at most maxLen bytes (else ErrLineTooLong, the
// line skipped), io.EOF at the end.
func ReadLine(r *bufio.Reader, buf []byte, maxLen int) ([]byte, error) {
	return readLine(r, buf, maxLen)
}
