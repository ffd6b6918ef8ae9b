package extract

import (
	"bufio"
	"bytes"
	"errors"
)

// markdownProducer reduces Markdown to its text, a line at a time. Lines
// longer than the read buffer arrive in fragments; only the first fragment
// of a line gets block-level treatment (headings, lists, fences, ...).
type markdownProducer struct {
	br          *bufio.Reader
	lines       int
	midLine     bool   // the last fragment did not end its line
	fence       []byte // the open code fence ("```", "~~~~"), nil outside code
	frontMatter bool
	inComment   bool // inside <!-- ... --> across lines
}

func newMarkdownProducer(src *source) *markdownProducer {
	return &markdownProducer{br: bufio.NewReaderSize(src, readBufferBytes)}
}

func (m *markdownProducer) next(out *sink) error {
	frag, err := m.br.ReadSlice('\n')
	full := err == nil
	if err != nil && !errors.Is(err, bufio.ErrBufferFull) && len(frag) == 0 {
		return err
	}
	line := bytes.TrimRight(frag, "\r\n")
	if m.midLine {
		m.text(out, line)
	} else {
		m.block(out, line)
		m.lines++
	}
	m.midLine = !full && errors.Is(err, bufio.ErrBufferFull)
	if !m.midLine && m.fence == nil {
		out.line()
	}
	if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
		return err
	}
	return nil
}

// text writes a fragment: verbatim inside a code block, else inline.
func (m *markdownProducer) text(out *sink, b []byte) {
	if m.fence != nil || m.frontMatter {
		if m.fence != nil {
			out.write(b)
		}
		return
	}
	m.inline(out, b)
}

// block handles the start of a line.
func (m *markdownProducer) block(out *sink, line []byte) {
	trimmed := bytes.TrimLeft(line, " ")
	indent := len(line) - len(trimmed)
	switch {
	case m.lines == 0 && bytes.Equal(bytes.TrimSpace(line), []byte("---")):
		m.frontMatter = true
		return
	case m.frontMatter:
		if t := bytes.TrimSpace(line); bytes.Equal(t, []byte("---")) || bytes.Equal(t, []byte("...")) {
			m.frontMatter = false
		}
		return
	case m.fence != nil:
		if indent < 4 && bytes.HasPrefix(trimmed, m.fence) && len(bytes.Trim(trimmed, string(m.fence[:1])+" \t")) == 0 {
			m.fence = nil
			out.paragraph()
			return
		}
		out.write(line)
		out.line()
		return
	case m.inComment:
		m.inline(out, line)
		return
	}
	if indent >= 4 { // indented code: keep the text
		out.write(trimmed)
		return
	}
	if f := fenceOf(trimmed); f != nil {
		m.fence = f
		out.paragraph()
		return
	}
	t := bytes.TrimSpace(trimmed)
	switch {
	case len(t) == 0:
		out.paragraph()
		return
	case isTableDelimiter(t), isReferenceDefinition(t):
		return
	case isRule(t):
		out.paragraph()
		return
	}
	if level := headingLevel(t); level > 0 {
		out.paragraph()
		h := bytes.TrimSpace(t[level:])
		h = bytes.TrimSpace(bytes.TrimRight(h, "#"))
		m.inline(out, h)
		out.paragraph()
		return
	}
	for len(t) > 0 && t[0] == '>' { // block quotes
		t = bytes.TrimLeft(t[1:], " ")
	}
	if rest, ok := cutListMarker(t); ok {
		out.line()
		t = rest
	}
	if len(t) > 0 && t[0] == '|' { // table row: cells separated by " | "
		t = bytes.TrimSpace(bytes.Trim(t, "|"))
	}
	m.inline(out, t)
}

// fenceOf returns the fence that line opens, or nil.
func fenceOf(line []byte) []byte {
	if len(line) < 3 || (line[0] != '`' && line[0] != '~') {
		return nil
	}
	n := 0
	for n < len(line) && line[n] == line[0] {
		n++
	}
	if n < 3 || (line[0] == '`' && bytes.IndexByte(line[n:], '`') >= 0) {
		return nil
	}
	return bytes.Clone(line[:n])
}

func headingLevel(t []byte) int {
	n := 0
	for n < len(t) && n < 7 && t[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(t) && t[n] != ' ' && t[n] != '\t') {
		return 0
	}
	return n
}

// isRule matches thematic breaks and setext underlines: a line of one of
// - * _ = (three or more, spaces allowed).
func isRule(t []byte) bool {
	c := t[0]
	if c != '-' && c != '*' && c != '_' && c != '=' {
		return false
	}
	n := 0
	for _, b := range t {
		switch b {
		case c:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3 || (c == '=' && n >= 1)
}

// isTableDelimiter matches |---|:---:| rows.
func isTableDelimiter(t []byte) bool {
	dashes := 0
	for _, b := range t {
		switch b {
		case '-':
			dashes++
		case '|', ':', ' ', '\t':
		default:
			return false
		}
	}
	return dashes >= 3 && bytes.IndexByte(t, '|') >= 0
}

// isReferenceDefinition matches "[label]: url".
func isReferenceDefinition(t []byte) bool {
	if t[0] != '[' {
		return false
	}
	end := bytes.Index(t, []byte("]:"))
	return end > 1 && bytes.IndexByte(t[1:end], ']') < 0
}

// cutListMarker strips "- ", "* ", "+ ", "1. " or "1) ".
func cutListMarker(t []byte) ([]byte, bool) {
	if len(t) >= 2 && (t[0] == '-' || t[0] == '*' || t[0] == '+') && (t[1] == ' ' || t[1] == '\t') {
		return bytes.TrimLeft(t[2:], " \t"), true
	}
	n := 0
	for n < len(t) && n < 9 && t[n] >= '0' && t[n] <= '9' {
		n++
	}
	if n > 0 && n+1 < len(t) && (t[n] == '.' || t[n] == ')') && (t[n+1] == ' ' || t[n+1] == '\t') {
		return bytes.TrimLeft(t[n+2:], " \t"), true
	}
	return t, false
}
