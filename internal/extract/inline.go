package extract

import (
	"bytes"
	"html"
)

// inline writes Markdown inline content as text: emphasis markers and
// backslash escapes removed, code spans kept without backticks, links and
// images reduced to their text, autolinks to their URL, inline HTML tags
// and comments dropped, entities decoded. Every search ahead is remembered,
// so a line is handled in linear time whatever it contains.
func (m *markdownProducer) inline(out *sink, b []byte) {
	var ahead lookahead
	for i := 0; i < len(b); {
		if m.inComment {
			j := bytes.Index(b[i:], []byte("-->"))
			if j < 0 {
				return
			}
			i += j + 3
			m.inComment = false
			continue
		}
		c := b[i]
		switch c {
		case '\\':
			if i+1 < len(b) && isASCIIPunct(b[i+1]) {
				out.write(b[i+1 : i+2])
				i += 2
				continue
			}
		case '`':
			n := runLength(b[i:], '`')
			if end := closingRun(b, i+n, n); end >= 0 {
				out.write(bytes.TrimSpace(b[i+n : end]))
				i = end + n
				continue
			}
			out.write(b[i : i+n])
			i += n
			continue
		case '!', '[':
			open := i
			if c == '!' {
				open++
			}
			if text, next, ok := ahead.link(b, open); ok {
				m.inline(out, text)
				i = next
				continue
			}
		case '<':
			if bytes.HasPrefix(b[i:], []byte("<!--")) {
				j := bytes.Index(b[i+4:], []byte("-->"))
				if j < 0 {
					m.inComment = true
					return
				}
				i += 4 + j + 3
				continue
			}
			if end, keep, ok := ahead.angle(b, i); ok {
				out.write(keep)
				i = end
				continue
			}
		case '*', '_', '~':
			n := runLength(b[i:], c)
			prev, next := byte(' '), byte(' ')
			if i > 0 {
				prev = b[i-1]
			}
			if i+n < len(b) {
				next = b[i+n]
			}
			if !isEmphasis(c, n, prev, next) {
				out.write(b[i : i+n])
			}
			i += n
			continue
		case '&':
			if j := bytes.IndexByte(b[i:min(len(b), i+32)], ';'); j > 1 {
				ent := string(b[i : i+j+1])
				if dec := html.UnescapeString(ent); dec != ent {
					out.writeString(dec)
					i += j + 1
					continue
				}
			}
		}
		j := i + 1
		for j < len(b) && !isInlineSpecial(b[j]) {
			j++
		}
		out.write(b[i:j])
		i = j
	}
}

func isInlineSpecial(c byte) bool {
	switch c {
	case '\\', '`', '!', '[', '<', '*', '_', '~', '&':
		return true
	}
	return false
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// isEmphasis decides whether a run of n markers c between prev and next is
// markup: not when it stands alone between spaces ("2 * 3"), not for "_"
// inside a word (snake_case), and "~" only doubled (strikethrough).
func isEmphasis(c byte, n int, prev, next byte) bool {
	switch {
	case isSpace(prev) && isSpace(next):
		return false
	case c == '_' && isAlnum(prev) && isAlnum(next):
		return false
	case c == '~' && n < 2:
		return false
	}
	return true
}

func runLength(b []byte, c byte) int {
	n := 0
	for n < len(b) && b[n] == c {
		n++
	}
	return n
}

// closingRun finds a run of exactly n backticks at or after from.
func closingRun(b []byte, from, n int) int {
	for i := from; i < len(b); {
		j := bytes.IndexByte(b[i:], '`')
		if j < 0 {
			return -1
		}
		start := i + j
		run := runLength(b[start:], '`')
		if run == n {
			return start
		}
		i = start + run
	}
	return -1
}

// lookahead remembers where the next "]", ")" and ">" of a line are, so
// that a line full of "[" or "<" is not searched again for every one. Each
// cache serves searches whose start only moves forward.
type lookahead struct {
	set                       bool
	bracket, ref, paren, angl int // positions; len(b) when there is none
}

func (a *lookahead) nextOf(b []byte, from int, c byte, cached *int) int {
	if !a.set {
		a.bracket, a.ref, a.paren, a.angl = -1, -1, -1, -1
		a.set = true
	}
	if *cached >= from {
		return *cached
	}
	if j := bytes.IndexByte(b[from:], c); j >= 0 {
		*cached = from + j
	} else {
		*cached = len(b)
	}
	return *cached
}

// link recognises [text](url), [text][ref] and [text][] at open (a "["),
// returning the text and where the construct ends.
func (a *lookahead) link(b []byte, open int) (text []byte, end int, ok bool) {
	if open >= len(b) || b[open] != '[' {
		return nil, 0, false
	}
	closeAt := a.nextOf(b, open+1, ']', &a.bracket)
	if closeAt >= len(b) {
		return nil, 0, false
	}
	text = b[open+1 : closeAt]
	switch {
	case closeAt+1 < len(b) && b[closeAt+1] == '(':
		p := a.nextOf(b, closeAt+2, ')', &a.paren)
		if p >= len(b) {
			return nil, 0, false
		}
		return text, p + 1, true
	case closeAt+1 < len(b) && b[closeAt+1] == '[':
		r := a.nextOf(b, closeAt+2, ']', &a.ref)
		if r >= len(b) {
			return nil, 0, false
		}
		return text, r + 1, true
	}
	return nil, 0, false
}

// angle recognises an autolink (<https://x>, <a@b.c>), whose inner text is
// kept, or an HTML tag, which is dropped, at lt (a "<").
func (a *lookahead) angle(b []byte, lt int) (end int, keep []byte, ok bool) {
	gt := a.nextOf(b, lt+1, '>', &a.angl)
	if gt >= len(b) || gt == lt+1 {
		return 0, nil, false
	}
	inner := b[lt+1 : gt]
	if bytes.IndexByte(inner, '<') >= 0 {
		return 0, nil, false
	}
	if isTag(inner) {
		return gt + 1, nil, true
	}
	if bytes.IndexAny(inner, " \t") < 0 && (bytes.Contains(inner, []byte("://")) || bytes.Contains(inner, []byte("mailto:")) || bytes.IndexByte(inner, '@') > 0) {
		return gt + 1, inner, true
	}
	return 0, nil, false
}

// isTag matches "tag ...", "/tag" and "tag/" (the inside of <...>).
func isTag(inner []byte) bool {
	if inner[0] == '/' {
		inner = inner[1:]
	}
	if len(inner) == 0 || !(inner[0] >= 'a' && inner[0] <= 'z' || inner[0] >= 'A' && inner[0] <= 'Z') {
		return false
	}
	i := 1
	for i < len(inner) && (isAlnum(inner[i]) && inner[i] < 0x80 || inner[i] == '-') {
		i++
	}
	return i == len(inner) || inner[i] == ' ' || inner[i] == '/' || inner[i] == '\t'
}
