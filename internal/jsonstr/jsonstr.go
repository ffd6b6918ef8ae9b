// Package jsonstr writes a string as a JSON string literal, for the
// encoders that build JSON by hand on a hot path (the handler's replies to
// the Functions host, the ingest result lines) instead of through
// encoding/json's reflection. The bytes are exactly what encoding/json
// writes with HTML escaping off. Plain finds the run of bytes a literal
// holds as they are, for the hand-written readers of the same hot paths.
package jsonstr

import "unicode/utf8"

const hex = "0123456789abcdef"

// Append appends s to dst as a JSON string literal, quotes included:
// '"' and '\\' escaped, control characters as \b, \f, \n, \r, \t or
// \u00XX, U+2028 and U+2029 as \u2028 and \u2029 (valid JSON, but not
// valid JavaScript), and each byte that is not valid UTF-8 as \ufffd.
func Append(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i += Plain(s[i:]); i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf { // a quote, a backslash or a control
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Plain is the length of the longest prefix of s that is the same bytes
// inside a JSON string literal: ASCII from ' ' to DEL but '"' and '\\'.
// Append copies such a prefix as it is, and a decoder reads it as it is.
// It looks at eight bytes at a time.
func Plain[T ~string | ~[]byte](s T) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		q, b := x^('"'*ones), x^('\\'*ones)
		// A lane below ' ', a '"' or '\\' (a zero lane of q or b), or
		// a lane with its high bit set.
		if ((x-' '*ones)&^x|(q-ones)&^q|(b-ones)&^b|x)&highs != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			break
		}
	}
	return i
}
