// Package ident is the one rule for the characters of identifiers a client
// or a blob names: item ids, idempotency keys, metadata, blob names, ledger
// units. An identifier must be valid UTF-8 without control characters,
// format characters (bidi overrides such as U+202E, zero-width characters
// such as U+200B, the byte-order mark U+FEFF), line or paragraph separators,
// or U+FFFD (what decoding makes of invalid bytes): characters that show
// one thing in a log, a console or a spreadsheet and mean another.
package ident

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Check returns nil if s follows the rule, else an error naming the first
// character it refuses and its byte offset.
func Check(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("not valid UTF-8")
	}
	for i, r := range s {
		if what := refused(r); what != "" {
			return fmt.Errorf("%s %U at byte %d", what, r, i)
		}
	}
	return nil
}

// Valid reports whether s follows the rule.
func Valid(s string) bool { return Check(s) == nil }

// refused says what kind of character r is if the rule refuses it.
func refused(r rune) string {
	switch {
	case unicode.IsControl(r):
		return "control character"
	case unicode.Is(unicode.Cf, r):
		return "format character"
	case unicode.In(r, unicode.Zl, unicode.Zp):
		return "line or paragraph separator"
	case r == utf8.RuneError:
		return "replacement character"
	}
	return ""
}
