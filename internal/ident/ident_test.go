package ident

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "ticket-42", "Zürich/Q1 report.txt", "日本語", "emoji 🙂", "a b\u00a0c"} {
		if err := Check(ok); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
	for s, want := range map[string]string{
		"abc\u202Egpj.exe": "format character U+202E at byte 3",
		"zero\u200Bwidth":  "format character U+200B at byte 4",
		"\uFEFFbom":        "format character U+FEFF at byte 0",
		"soft\u00ADhyphen": "format character U+00AD at byte 4",
		"tab\there":        "control character U+0009 at byte 3",
		"nul\x00":          "control character U+0000 at byte 3",
		"del\x7f":          "control character U+007F at byte 3",
		"c1\u0085":         "control character U+0085 at byte 2",
		"line\u2028sep":    "line or paragraph separator U+2028 at byte 4",
		"para\u2029sep":    "line or paragraph separator U+2029 at byte 4",
		"bad\uFFFD":        "replacement character U+FFFD at byte 3",
		"bytes\xff":        "not valid UTF-8",
	} {
		err := Check(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%q) = %v, want %q", s, err, want)
		}
		if Valid(s) {
			t.Errorf("Valid(%q) = true", s)
		}
	}
}
