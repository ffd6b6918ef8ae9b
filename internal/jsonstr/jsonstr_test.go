package jsonstr_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/offpath/offpath/internal/jsonstr"
)

// reference is encoding/json's literal for s, HTML escaping off.
func reference(t testing.TB, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// FuzzAppend: for any string, Append writes what encoding/json writes (so
// valid JSON), after what dst held.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{
		"", "plain", `quote " and backslash \`, "tab\tnewline\nreturn\r",
		"\b\f\x00\x01\x1f\x7f", "<a href=\"x\">&amp;</a>", "é漢字🙂",
		"line\u2028para\u2029end", "bad \xff byte", "cut \xe6\xbc", "\xc0\xaf", "\ufffd",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := jsonstr.Append([]byte("prefix:"), s)
		want := append([]byte("prefix:"), reference(t, s)...)
		if !bytes.Equal(got, want) {
			t.Fatalf("Append(%q) = %s, want %s", s, got, want)
		}
		if !json.Valid(got[len("prefix:"):]) {
			t.Fatalf("Append(%q) = %s: not JSON", s, got)
		}
	})
}

// FuzzPlain: Plain stops at the first byte that is not the same inside a
// JSON string literal, whatever its place in a word of eight, for a
// string and for bytes alike.
func FuzzPlain(f *testing.F) {
	for _, s := range []string{
		"", "plain", "exactly8", "sixteen bytes ok", "0123456\"89", "0123456789abcde\\",
		"0123456789\x1f", "0123456789\x7f~ ", "01234567é", "\x00", "       \x80",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := 0
		for want < len(s) && s[want] >= ' ' && s[want] != '"' && s[want] != '\\' && s[want] < 0x80 {
			want++
		}
		if got := jsonstr.Plain(s); got != want {
			t.Fatalf("Plain(%q) = %d, want %d", s, got, want)
		}
		if got := jsonstr.Plain([]byte(s)); got != want {
			t.Fatalf("Plain([]byte(%q)) = %d, want %d", s, got, want)
		}
	})
}
