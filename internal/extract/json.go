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
}

type jsonLevel struct {
	object    bool
	key       string // the current key of an object
	expectKey bool
}

func newJSONProducer(src *source, maxDepth int) *jsonProducer {
	dec := json.NewDecoder(bufio.NewReaderSize(src, readBufferBytes))
	dec.UseNumber()
	return &jsonProducer{dec: dec, maxDepth: maxDepth}
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
		return err // the source's (the Reader prefers its own record of it)
	}
	if d, ok := tok.(json.Delim); ok {
		switch d {
		case '{', '[':
			j.value()
			if len(j.stack) >= j.maxDepth {
				return outcome.Reject(ReasonTooDeep, fmt.Errorf("JSON nested deeper than %d", j.maxDepth))
			}
			j.stack = append(j.stack, jsonLevel{object: d == '{', expectKey: d == '{'})
		case '}', ']':
			j.stack = j.stack[:len(j.stack)-1]
			if n := len(j.stack); n == 0 || n == 1 && !j.stack[0].object {
				out.paragraph()
			}
		}
		return nil
	}
	if n := len(j.stack); n > 0 && j.stack[n-1].object && j.stack[n-1].expectKey {
		j.stack[n-1].key, _ = tok.(string)
		j.stack[n-1].expectKey = false
		return nil
	}
	j.value()
	if s, ok := tok.(string); ok && strings.TrimSpace(s) != "" {
		if p := j.path(); p != "" {
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

// path is the last maxPathKeys object keys above the current value.
func (j *jsonProducer) path() string {
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
