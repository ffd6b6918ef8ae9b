package extract

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/offpath/offpath/internal/outcome"
)

// maxPathKeys is how many keys, innermost last, prefix a JSON string value.
const maxPathKeys = 3

// jsonProducer writes every string value of a JSON document (or of a
// sequence of them, as in JSON Lines) on its own line, after the keys that
// lead to it: {"author":{"name":"Ada"}} gives "author.name: Ada". Each
// top-level value, and each object directly inside a top-level array, is
// a paragraph.
type jsonProducer struct {
	dec      *json.Decoder
	maxDepth int
	stack    []jsonLevel
	path     string // the path of the current value, valid while pathOK
	pathOK   bool
}

type jsonLevel struct {
	object    bool
	key       string // the current key of an object
	expectKey bool
}

func newJSONProducer(src *source, maxDepth, maxToken int) *jsonProducer {
	guard := &tokenGuard{r: bufio.NewReaderSize(src, readBufferBytes), max: maxToken}
	dec := json.NewDecoder(guard)
	dec.UseNumber()
	return &jsonProducer{dec: dec, maxDepth: maxDepth}
}

// tokenGuard watches the bytes on their way to the decoder and rejects a
// string longer than max bytes before the decoder has to hold it:
// encoding/json keeps a whole value in its buffer, then copies it out.
type tokenGuard struct {
	r        io.Reader
	max      int
	inString bool
	escape   bool
	n        int // bytes of the current string
}

func (g *tokenGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	for _, c := range p[:n] {
		switch {
		case !g.inString:
			if c == '"' {
				g.inString, g.n = true, 0
			}
		case g.escape:
			g.escape = false
		case c == '\\':
			g.escape = true
		case c == '"':
			g.inString = false
		}
		if g.inString {
			if g.n++; g.n > g.max {
				return 0, outcome.Reject(ReasonTooLarge, fmt.Errorf("a JSON string is longer than %d bytes", g.max))
			}
		}
	}
	return n, err
}

func (j *jsonProducer) next(out *sink) error {
	tok, err := j.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			if len(j.stack) > 0 {
				return outcome.Reject(ReasonMalformed, errors.New("JSON ends inside a value"))
			}
			return io.EOF
		}
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return outcome.Reject(ReasonMalformed, fmt.Errorf("JSON syntax error at byte %d: %w", syn.Offset, err))
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return outcome.Reject(ReasonMalformed, errors.New("JSON ends inside a value"))
		}
		return err // the guard's rejection, or the source's error (the Reader prefers its own record of it)
	}
	if d, ok := tok.(json.Delim); ok {
		switch d {
		case '{', '[':
			j.value()
			if len(j.stack) >= j.maxDepth {
				return outcome.Reject(ReasonTooDeep, fmt.Errorf("JSON nested deeper than %d", j.maxDepth))
			}
			j.stack = append(j.stack, jsonLevel{object: d == '{', expectKey: d == '{'})
			j.pathOK = false
		case '}', ']':
			j.stack = j.stack[:len(j.stack)-1]
			j.pathOK = false
			if n := len(j.stack); n == 0 || n == 1 && !j.stack[0].object {
				out.paragraph()
			}
		}
		return nil
	}
	if n := len(j.stack); n > 0 && j.stack[n-1].object && j.stack[n-1].expectKey {
		j.stack[n-1].key, _ = tok.(string)
		j.stack[n-1].expectKey = false
		j.pathOK = false
		return nil
	}
	j.value()
	if s, ok := tok.(string); ok && strings.TrimSpace(s) != "" {
		if !j.pathOK {
			j.path, j.pathOK = j.keys(), true
		}
		if p := j.path; p != "" {
			out.writeString(p)
			out.writeString(": ")
		}
		out.writeString(s)
		out.line()
	}
	if len(j.stack) == 0 {
		out.paragraph()
	}
	return nil
}

// value records that the current object's key has had its value.
func (j *jsonProducer) value() {
	if n := len(j.stack); n > 0 && j.stack[n-1].object {
		j.stack[n-1].expectKey = true
	}
}

// keys joins the last maxPathKeys object keys above the current value.
func (j *jsonProducer) keys() string {
	var keys []string
	for i := len(j.stack) - 1; i >= 0 && len(keys) < maxPathKeys; i-- {
		if j.stack[i].object && j.stack[i].key != "" {
			keys = append(keys, j.stack[i].key)
		}
	}
	for l, r := 0, len(keys)-1; l < r; l, r = l+1, r-1 {
		keys[l], keys[r] = keys[r], keys[l]
	}
	return strings.Join(keys, ".")
}
