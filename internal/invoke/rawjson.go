package invoke

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// member is one key/value pair of a JSON object, both slices of the request
// body: decoding the envelope copies nothing until a value is asked for.
type member struct {
	key []byte // raw key without quotes; escaped keys are unescaped copies
	val []byte // raw JSON value
}

// members lists the members of the JSON object obj, which must be valid JSON
// (the caller checks once with json.Valid). It appends to dst to reuse memory.
func members(dst []member, obj []byte) ([]member, error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return dst, errors.New("not a JSON object")
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return dst, nil
	}
	for i < len(obj) {
		kEnd := skipValue(obj, i)
		key := obj[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var s string
			if err := json.Unmarshal(obj[i:kEnd], &s); err != nil {
				return dst, fmt.Errorf("object key: %w", err)
			}
			key = []byte(s)
		}
		i = skipSpace(obj, kEnd)
		i = skipSpace(obj, i+1) // ':'
		vEnd := skipValue(obj, i)
		dst = append(dst, member{key: key, val: obj[i:vEnd]})
		i = skipSpace(obj, vEnd)
		if i < len(obj) && obj[i] == '}' {
			return dst, nil
		}
		i = skipSpace(obj, i+1) // ','
	}
	return dst, errors.New("unterminated JSON object")
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the index just past the valid JSON value starting at i.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		i++
		for i < len(b) {
			switch b[i] {
			case '\\':
				i += 2
			case '"':
				return i + 1
			default:
				i++
			}
		}
		return i
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipValue(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default: // number, true, false, null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// lookup finds key in ms: exactly first, as the host sends PascalCase keys,
// then ignoring case, as tolerance for hand-written or older envelopes.
func lookup(ms []member, key string) ([]byte, bool) {
	for _, m := range ms {
		if string(m.key) == key {
			return m.val, true
		}
	}
	for _, m := range ms {
		if bytes.EqualFold(m.key, []byte(key)) {
			return m.val, true
		}
	}
	return nil, false
}
