package lines_test

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/lines"
)

// readAll reads every line of in with a small buffer (so long lines come
// in several chunks), naming a too-long line "<too long>".
func readAll(t *testing.T, in string, maxLen int) []string {
	t.Helper()
	r := bufio.NewReaderSize(strings.NewReader(in), 16)
	var got []string
	var buf []byte
	for {
		line, err := lines.Read(r, buf, maxLen)
		switch {
		case errors.Is(err, io.EOF):
			return got
		case errors.Is(err, lines.ErrTooLong):
			got = append(got, "<too long>")
		case err != nil:
			t.Fatalf("Read: %v", err)
		default:
			got = append(got, string(line))
		}
		buf = line
	}
}

// TestRead_BoundIsTheLineWithoutItsEnd: a line of exactly maxLen bytes is
// read whether it ends in "\n", "\r\n" or the end of the stream, and one of
// maxLen+1 bytes is too long whatever its end; reading goes on after it.
func TestRead_BoundIsTheLineWithoutItsEnd(t *testing.T) {
	t.Parallel()
	const maxLen = 40
	fits, over := strings.Repeat("a", maxLen), strings.Repeat("b", maxLen+1)
	tests := []struct {
		name, in string
		want     []string
	}{
		{"LF", fits + "\n" + over + "\nnext\n", []string{fits, "<too long>", "next"}},
		{"CRLF", fits + "\r\n" + over + "\r\nnext\r\n", []string{fits, "<too long>", "next"}},
		{"last line without an end", "x\n" + fits, []string{"x", fits}},
		{"over-long last line without an end", "x\n" + over, []string{"x", "<too long>"}},
		{"far over the bound", strings.Repeat("c", 10*maxLen) + "\nnext", []string{"<too long>", "next"}},
		{"blank lines", "\n\r\n\nz", []string{"", "", "", "z"}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := readAll(t, tt.in, maxLen)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("lines %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRead_NoTokenLimit: a line far beyond bufio.Scanner's 64 KiB is read
// whole when the bound allows it.
func TestRead_NoTokenLimit(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 200_000)
	if got := readAll(t, "a\n"+long+"\nlast", 1<<20); len(got) != 3 || got[1] != long || got[2] != "last" {
		t.Errorf("read %d lines, want a, the long line and last", len(got))
	}
}

// failing returns its data, then err.
type failing struct {
	data string
	err  error
}

func (f *failing) Read(p []byte) (int, error) {
	if f.data == "" {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// TestRead_ReaderErrorIsWrapped: an error of the underlying reader, inside
// a line or while reading past a too-long one, is returned wrapped.
func TestRead_ReaderErrorIsWrapped(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for _, data := range []string{"abc", strings.Repeat("x", 100)} {
		r := bufio.NewReaderSize(&failing{data: data, err: boom}, 16)
		if _, err := lines.Read(r, nil, 10); !errors.Is(err, boom) {
			t.Errorf("%d bytes then an error: %v, want it wrapped", len(data), err)
		}
	}
}
