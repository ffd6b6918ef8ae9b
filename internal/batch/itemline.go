package batch

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json"

	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/jsonstr"
)

// itemLine decodes the input lines of a tenant's JSONL. The common shape
// (the item's members named exactly, each once, strings valid UTF-8,
// numbers that fit) is read by hand in one pass; any other line, a
// malformed one included, is decoded the general way, with itemOptions.
// Either way an Item is what decoding with itemOptions yields.
type itemLine struct {
	b   []byte
	i   int
	buf []byte // an escaped string's unescaped bytes
}

// decode decodes line into *it, which must be the zero Item.
func (d *itemLine) decode(line []byte, it *Item) error {
	if d.item(line, it) {
		return nil
	}
	*it = Item{}
	return json.Unmarshal(line, it, itemOptions)
}

// item reports whether the line was an item of the common shape, read into
// *it; false leaves *it partly written.
func (d *itemLine) item(line []byte, it *Item) bool {
	d.b, d.i = line, 0
	defer func() { d.b = nil }()
	ok := d.object(itemMembers, func(i int) (ok bool) {
		switch i {
		case 0:
			it.ID, ok = d.str()
		case 1:
			it.Prompt, ok = d.str()
		case 2:
			it.Messages, ok = d.messages()
		case 3:
			it.MaxTokens, ok = d.int()
		case 4:
			it.MaxCompletionTokens, ok = d.int()
		case 5:
			var t float64
			if t, ok = d.float(); ok {
				it.Temperature = &t
			}
		}
		return ok
	})
	d.ws()
	return ok && d.i == len(d.b)
}

// The members of an Item and of a Message, as their JSON tags name them.
var (
	itemMembers    = []string{"id", "prompt", "messages", "max_tokens", "max_completion_tokens", "temperature"}
	messageMembers = []string{"role", "content"}
)

func (d *itemLine) messages() ([]batchfile.Message, bool) {
	if !d.eat('[') {
		return nil, false
	}
	ms := []batchfile.Message{}
	if d.ws(); d.eat(']') {
		return ms, true
	}
	for {
		var m batchfile.Message
		if !d.object(messageMembers, func(i int) (ok bool) {
			if i == 0 {
				m.Role, ok = d.str()
			} else {
				m.Content, ok = d.str()
			}
			return ok
		}) {
			return nil, false
		}
		ms = append(ms, m)
		d.ws()
		switch {
		case d.eat(','):
		case d.eat(']'):
			return ms, true
		default:
			return nil, false
		}
	}
}

// object reads an object whose members are among names, each named
// exactly, without escapes, and at most once: it calls member with the
// member's index in names and the reader at its value.
func (d *itemLine) object(names []string, member func(i int) bool) bool {
	if d.ws(); !d.eat('{') {
		return false
	}
	if d.ws(); d.eat('}') {
		return true
	}
	var seen uint32
	for {
		if d.ws(); !d.eat('"') {
			return false
		}
		n := jsonstr.Plain(d.b[d.i:])
		i := index(names, d.b[d.i:d.i+n])
		if d.i += n; !d.eat('"') || i < 0 || seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
		if d.ws(); !d.eat(':') {
			return false
		}
		if d.ws(); !member(i) {
			return false
		}
		d.ws()
		switch {
		case d.eat(','):
		case d.eat('}'):
			return true
		default:
			return false
		}
	}
}

// index is name's index in names, or -1.
func index(names []string, name []byte) int {
	for i, n := range names {
		if string(name) == n {
			return i
		}
	}
	return -1
}

// str reads a string: valid UTF-8, escapes other than a lone surrogate.
func (d *itemLine) str() (string, bool) {
	if !d.eat('"') {
		return "", false
	}
	start := d.i
	d.buf = d.buf[:0] // every escape adds at least one byte to it
	for {
		d.i += jsonstr.Plain(d.b[d.i:])
		if d.i == len(d.b) {
			return "", false
		}
		switch c := d.b[d.i]; {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if len(d.buf) > 0 {
				return string(append(d.buf, s...)), true
			}
			return string(s), true
		case c == '\\':
			d.buf = append(d.buf, d.b[start:d.i]...)
			if !d.escape() {
				return "", false
			}
			start = d.i
		case c < ' ':
			return "", false
		default:
			r, size := utf8.DecodeRune(d.b[d.i:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			d.i += size
		}
	}
}

// escape appends the character of the escape at the reader to buf.
func (d *itemLine) escape() bool {
	if d.i+1 >= len(d.b) {
		return false
	}
	c := d.b[d.i+1]
	d.i += 2
	switch c {
	case '"', '\\', '/':
		d.buf = append(d.buf, c)
	case 'b':
		d.buf = append(d.buf, '\b')
	case 'f':
		d.buf = append(d.buf, '\f')
	case 'n':
		d.buf = append(d.buf, '\n')
	case 'r':
		d.buf = append(d.buf, '\r')
	case 't':
		d.buf = append(d.buf, '\t')
	case 'u':
		r, ok := d.hex4()
		if !ok {
			return false
		}
		if utf16.IsSurrogate(r) {
			if !d.eat('\\') || !d.eat('u') {
				return false
			}
			lo, ok := d.hex4()
			if r = utf16.DecodeRune(r, lo); !ok || r == utf8.RuneError {
				return false
			}
		}
		d.buf = utf8.AppendRune(d.buf, r)
	default:
		return false
	}
	return true
}

// hex4 reads the four hex digits of a \u escape.
func (d *itemLine) hex4() (rune, bool) {
	if d.i+4 > len(d.b) {
		return 0, false
	}
	r, err := strconv.ParseUint(string(d.b[d.i:d.i+4]), 16, 16)
	d.i += 4
	return rune(r), err == nil
}

// int reads a non-negative integer of at most 18 digits.
func (d *itemLine) int() (int, bool) {
	start := d.i
	n := 0
	for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' && d.i-start < 18 {
		n = n*10 + int(d.b[d.i]-'0')
		d.i++
	}
	digits := d.i - start
	return n, digits > 0 && (digits == 1 || d.b[start] != '0')
}

// float reads a number as the JSON grammar has it.
func (d *itemLine) float() (float64, bool) {
	start := d.i
	d.eat('-')
	if !d.eat('0') && d.digits() == 0 {
		return 0, false
	}
	if d.eat('.') && d.digits() == 0 {
		return 0, false
	}
	if d.eat('e') || d.eat('E') {
		if !d.eat('+') {
			d.eat('-')
		}
		if d.digits() == 0 {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(string(d.b[start:d.i]), 64)
	return f, err == nil
}

func (d *itemLine) digits() int {
	start := d.i
	for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i - start
}

// ws skips JSON whitespace.
func (d *itemLine) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// eat consumes c if it is next.
func (d *itemLine) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}
