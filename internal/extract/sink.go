package extract

// sink collects the text the producers emit and normalises it on the way:
// carriage returns, form feeds and vertical tabs become newlines, other
// control characters are dropped, whitespace at the ends of lines is
// dropped, runs of spaces and tabs inside a line become one (indentation is
// kept), leading blank lines are dropped, and runs of blank lines become
// one. The Reader drains buf.
type sink struct {
	buf      []byte
	newlines int    // newlines at the end of the output, after the last text
	held     []byte // spaces and tabs not yet written: dropped at a line end
	lastCR   bool   // the last byte written was '\r'
	text     int64  // bytes of text written, not counting line breaks
}

// write emits text. Spans of visible characters with single spaces
// between words, the bulk of any text, are copied whole.
func (s *sink) write(b []byte) {
	for len(b) > 0 {
		i := 0
		for i < len(b) {
			if c := b[i]; c > ' ' && c != 0x7f || c == ' ' && i > 0 && i+1 < len(b) && b[i+1] > ' ' && b[i+1] != 0x7f {
				i++
				continue
			}
			break
		}
		if i > 0 {
			s.run(b[:i])
			b = b[i:]
			continue
		}
		c := b[0]
		b = b[1:]
		switch c {
		case '\n':
			if !s.lastCR {
				s.newline()
			}
		case '\r', '\f', '\v':
			s.newline()
		case ' ', '\t':
			s.held = append(s.held, c)
		}
		s.lastCR = c == '\r'
	}
}

// run writes a span that starts and ends with a visible character.
func (s *sink) run(b []byte) {
	s.lastCR = false
	switch {
	case s.text == 0: // nothing before the first text: no blank lines, no indentation
	case s.newlines > 0: // a new line, with its indentation
		for range min(s.newlines, 2) {
			s.buf = append(s.buf, '\n')
		}
		s.buf = append(s.buf, s.held...)
	case len(s.held) == 1:
		s.buf = append(s.buf, s.held[0])
	case len(s.held) > 1: // a run of blanks inside a line is one space
		s.buf = append(s.buf, ' ')
	}
	s.newlines = 0
	if len(s.held) > 0 {
		s.held = s.held[:0]
	}
	s.buf = append(s.buf, b...)
	s.text += int64(len(b))
}

// newline ends the current line.
func (s *sink) newline() {
	s.held = s.held[:0]
	s.newlines++
}

// paragraph ends the current paragraph: a blank line follows, unless
// nothing has been written yet.
func (s *sink) paragraph() {
	s.held = s.held[:0]
	s.newlines = max(s.newlines, 2)
	s.lastCR = false
}

// line ends the current line if it has text.
func (s *sink) line() {
	s.held = s.held[:0]
	s.newlines = max(s.newlines, 1)
	s.lastCR = false
}

// space separates words: one space, unless the line is empty or already
// ends with whitespace.
func (s *sink) space() {
	if len(s.held) == 0 && s.newlines == 0 {
		s.held = append(s.held, ' ')
	}
}

// writeString emits text without allocating.
func (s *sink) writeString(str string) {
	for len(str) > 0 {
		var tmp [256]byte
		n := copy(tmp[:], str)
		s.write(tmp[:n])
		str = str[n:]
	}
}
