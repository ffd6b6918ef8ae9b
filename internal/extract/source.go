package extract

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/offpath/offpath/internal/outcome"
)

const (
	// sniffBytes is how much of the start of a document is examined for
	// signs of binary content.
	sniffBytes = 8 << 10
	// maxControlPercent of the sniffed bytes may be control characters
	// other than whitespace before the document counts as binary.
	maxControlPercent = 10
	// minControls is the fewest control characters that make a document
	// binary, so a short note with one stray control character is not.
	minControls     = 8
	readBufferBytes = 64 << 10
)

// signatures are magic numbers of binary formats that turn up named .txt.
func signatures() []struct{ magic, name string } {
	return []struct{ magic, name string }{
		{"%PDF-", "PDF"},
		{"PK\x03\x04", "ZIP (or an Office document)"},
		{"\x89PNG", "PNG"},
		{"\xff\xd8\xff", "JPEG"},
		{"GIF8", "GIF"},
		{"\x1f\x8b", "gzip"},
		{"\xd0\xcf\x11\xe0", "OLE (legacy Office)"},
		{"\x7fELF", "ELF executable"},
		{"MZ", "Windows executable"},
	}
}

// source reads the raw document: it counts bytes, enforces the size limit,
// skips a UTF-8 byte-order mark, and rejects binary and non-UTF-8 input as it
// streams past. Read errors of the underlying reader pass through.
type source struct {
	br       *bufio.Reader
	max      int64
	n        int64   // bytes read so far (after the BOM)
	carry    [4]byte // an incomplete rune at the end of the last read
	ncarry   int
	sniffed  bool
	err      error // sticky
	srcError error // the last error of the underlying reader, if any
}

func newSource(r io.Reader, maxBytes int64) *source {
	return &source{br: bufio.NewReaderSize(r, readBufferBytes), max: maxBytes}
}

func (s *source) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if !s.sniffed {
		s.sniffed = true
		if err := s.sniff(); err != nil {
			s.err = err
			return 0, err
		}
	}
	n, err := s.br.Read(p)
	if n > 0 {
		if verr := s.check(p[:n]); verr != nil {
			s.err = verr
			return 0, verr
		}
	}
	switch {
	case err == io.EOF:
		if s.ncarry > 0 {
			s.err = outcome.Reject(ReasonNotUTF8, fmt.Errorf("truncated UTF-8 sequence at the end (byte %d)", s.n-int64(s.ncarry)))
			return n, s.err
		}
		s.err = io.EOF
	case err != nil:
		s.srcError = err
		s.err = fmt.Errorf("read document: %w", err)
		return n, s.err
	}
	return n, s.err
}

// sniff looks at the start of the document before any of it is used.
func (s *source) sniff() error {
	head, err := s.br.Peek(sniffBytes)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		s.srcError = err
		return fmt.Errorf("read document: %w", err)
	}
	switch {
	case bytes.HasPrefix(head, []byte("\xef\xbb\xbf")):
		_, _ = s.br.Discard(3)
		head = head[3:]
	case bytes.HasPrefix(head, []byte("\xff\xfe")) || bytes.HasPrefix(head, []byte("\xfe\xff")):
		return outcome.Reject(ReasonNotUTF8, errors.New("UTF-16 (byte-order mark); only UTF-8 is supported"))
	}
	for _, sig := range signatures() {
		if bytes.HasPrefix(head, []byte(sig.magic)) {
			if sig.name == "PDF" {
				return outcome.Reject(ReasonUnsupported, errors.New("the content is a PDF; PDF extraction is not supported"))
			}
			return outcome.Reject(ReasonBinary, fmt.Errorf("the content is %s", sig.name))
		}
	}
	controls := 0
	for i, c := range head {
		if c == 0 {
			return outcome.Reject(ReasonBinary, fmt.Errorf("NUL byte at %d", i))
		}
		if isControl(c) {
			controls++
		}
	}
	if controls >= minControls && controls*100 > maxControlPercent*len(head) {
		return outcome.Reject(ReasonBinary, fmt.Errorf("%d of the first %d bytes are control characters", controls, len(head)))
	}
	return nil
}

// isControl reports C0 controls other than whitespace, and DEL.
func isControl(c byte) bool {
	return (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') || c == 0x7f
}

// check validates one read: size, NUL bytes and UTF-8, carrying an
// incomplete rune at the end over to the next read.
func (s *source) check(b []byte) error {
	start := s.n
	s.n += int64(len(b))
	if s.max > 0 && s.n > s.max {
		return outcome.Reject(ReasonTooLarge, fmt.Errorf("more than %d bytes", s.max))
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return outcome.Reject(ReasonBinary, fmt.Errorf("NUL byte at %d", start+int64(i)))
	}
	if s.ncarry > 0 { // complete the rune begun in the last read
		need := 0
		for need < len(b) && need < utf8.UTFMax-s.ncarry && !utf8.FullRune(append(s.carry[:s.ncarry:s.ncarry], b[:need]...)) {
			need++
		}
		r := append(s.carry[:s.ncarry:s.ncarry], b[:need]...)
		if !utf8.FullRune(r) {
			copy(s.carry[s.ncarry:], b)
			s.ncarry += len(b)
			return nil
		}
		if !utf8.Valid(r) {
			return outcome.Reject(ReasonNotUTF8, fmt.Errorf("invalid UTF-8 at byte %d", start-int64(s.ncarry)))
		}
		s.ncarry = 0
		b = b[need:]
		start += int64(need)
	}
	// Hold back a rune cut by the end of the read.
	tail := len(b)
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				tail = i
			}
			break
		}
	}
	if !utf8.Valid(b[:tail]) {
		off := 0
		for off < tail {
			r, size := utf8.DecodeRune(b[off:tail])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return outcome.Reject(ReasonNotUTF8, fmt.Errorf("invalid UTF-8 at byte %d", start+int64(off)))
	}
	s.ncarry = copy(s.carry[:], b[tail:])
	return nil
}
