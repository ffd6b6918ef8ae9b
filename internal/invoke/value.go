package invoke

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Value is one raw value of the envelope (a Data or Metadata entry). Its
// methods decode it the tolerant way the host's encoding requires. A Value is
// only valid during the invocation; the decoded results are copies.
type Value []byte

// IsNull reports whether the value is absent or JSON null.
func (v Value) IsNull() bool {
	return len(v) == 0 || string(v) == "null"
}

// String decodes a string that the host may have JSON-encoded twice
// ("\"abc\"" → abc). Numbers and booleans are returned as their text, null
// as "". Objects and arrays are an error.
func (v Value) String() (string, error) {
	switch {
	case v.IsNull():
		return "", nil
	case v[0] == '"':
		s, err := unquote(v)
		if err != nil {
			return "", err
		}
		if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
			if inner, err := unquote(s); err == nil {
				return string(inner), nil
			}
		}
		return string(s), nil
	case v[0] == '{' || v[0] == '[':
		return "", fmt.Errorf("want a string, got %s", kind(v))
	default:
		return string(v), nil
	}
}

// Int decodes an integer sent as a JSON number or as a string ("3").
func (v Value) Int() (int64, error) {
	s, err := v.String()
	if err != nil {
		return 0, err
	}
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want an integer: %w", err)
	}
	return n, nil
}

// Bool decodes a boolean sent as a JSON boolean or as a string ("True").
func (v Value) Bool() (bool, error) {
	s, err := v.String()
	if err != nil {
		return false, err
	}
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return false, fmt.Errorf("want a boolean: %w", err)
	}
	return b, nil
}

// Time decodes a timestamp in any of the host's forms: RFC 3339 with or
// without fraction, zone-less (taken as UTC), or +00:00. 0001-01-01T00:00:00
// ("never") and null decode to the zero time.
func (v Value) Time() (time.Time, error) {
	s, err := v.String()
	if err != nil {
		return time.Time{}, err
	}
	return parseTime(s)
}

// Bytes decodes a body: base64 for dataType binary, a double-encoded string
// otherwise (its UTF-8 bytes), or an object or array (its JSON text).
func (v Value) Bytes() ([]byte, error) {
	switch {
	case v.IsNull():
		return nil, nil
	case v[0] == '{' || v[0] == '[':
		return bytes.Clone(v), nil
	case v[0] != '"':
		return nil, fmt.Errorf("want a string or base64 body, got %s", kind(v))
	}
	s, err := unquote(v)
	if err != nil {
		return nil, err
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		inner, err := unquote(s)
		if err != nil {
			return nil, fmt.Errorf("double-encoded body: %w", err)
		}
		return bytes.Clone(inner), nil
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, s)
	if err != nil {
		return nil, fmt.Errorf("body is neither base64 (dataType binary) nor a double-encoded string: %w", err)
	}
	return b[:n], nil
}

// Decode unmarshals an object value into dst. An object the host sent as a
// JSON string holding its text (arrays from table queries) is unwrapped first.
func (v Value) Decode(dst any) error {
	raw := []byte(v)
	if len(raw) > 0 && raw[0] == '"' {
		s, err := v.String()
		if err != nil {
			return err
		}
		raw = []byte(s)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("decode %s: %w", kind(v), err)
	}
	return nil
}

// unquote decodes one JSON string literal. Without escapes it returns a
// slice of lit; with them it decodes by hand into a new slice rather than
// through reflection, since every double-encoded Metadata value has escapes.
func unquote(lit []byte) ([]byte, error) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return nil, errors.New("malformed JSON string")
	}
	inner := lit[1 : len(lit)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner, nil
	}
	out := make([]byte, 0, len(inner))
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i+1 >= len(inner) {
			return nil, errors.New("malformed JSON string: trailing backslash")
		}
		i++
		switch inner[i] {
		case '"', '\\', '/':
			out = append(out, inner[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := decodeUnicodeEscape(inner[i-1:])
			if n == 0 {
				return nil, errors.New("malformed JSON string: bad \\u escape")
			}
			out = utf8.AppendRune(out, r)
			i += n - 2
		default:
			return nil, fmt.Errorf("malformed JSON string: bad escape \\%c", inner[i])
		}
	}
	return out, nil
}

// decodeUnicodeEscape decodes \uXXXX (and a following low surrogate) at the
// start of b, returning the rune and the bytes consumed, or 0 if malformed.
func decodeUnicodeEscape(b []byte) (rune, int) {
	hex4 := func(b []byte) rune {
		if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
			return -1
		}
		n, err := strconv.ParseUint(string(b[2:6]), 16, 32)
		if err != nil {
			return -1
		}
		return rune(n)
	}
	r := hex4(b)
	if r < 0 {
		return 0, 0
	}
	if utf16.IsSurrogate(r) {
		if lo := hex4(b[6:]); lo >= 0 {
			if dec := utf16.DecodeRune(r, lo); dec != utf8.RuneError {
				return dec, 12
			}
		}
		return utf8.RuneError, 6
	}
	return r, 6
}

func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasPrefix(s, "0001-01-01T00:00:00") {
		return time.Time{}, nil
	}
	// The zone-less form is the common one (DateTime values), so try it
	// first when no zone is visible; Go's parser accepts a fraction after the
	// seconds even where a layout has none.
	layouts := [...]string{
		time.RFC3339Nano,
		"2006-01-02T15:04:05.9999999Z0700",
		"2006-01-02 15:04:05Z07:00",
	}
	if !hasZone(s) {
		layouts = [...]string{"2006-01-02T15:04:05.9999999", "2006-01-02 15:04:05", ""}
	}
	for _, layout := range layouts {
		if layout == "" {
			break
		}
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("unrecognised timestamp %q", s)
}

// hasZone reports whether a timestamp ends in Z or a ±hh:mm / ±hhmm offset.
func hasZone(s string) bool {
	if strings.HasSuffix(s, "Z") || strings.HasSuffix(s, "z") {
		return true
	}
	t := strings.LastIndexByte(s, 'T')
	if t < 0 {
		t = strings.LastIndexByte(s, ' ')
	}
	return strings.ContainsAny(s[t+1:], "+-")
}

func kind(v []byte) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
