package extract_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"unicode/utf8"

	"github.com/offpath/offpath/internal/extract"
	"github.com/offpath/offpath/internal/outcome"
)

// FuzzReader checks that no input panics any kind of extraction, that
// failures are rejections, and that the text is valid UTF-8 without control
// characters (other than tab and newline) or runs of blank lines.
func FuzzReader(f *testing.F) {
	seeds := []string{
		"plain text\r\nline", "# h\n*em* [l](u) `c` <b>x</b> &amp;", "```\ncode\n```", "<p>a<script>b</script>c &lt;</p>",
		`{"a":["b",{"c":"d"}]}`, "a,b\n1,\"2\"\n", "\xff\xfe", "\x00", "caf\xe9", "[[[[", "<svg><svg>", "---\nx\n---\ny",
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		kind := extract.Kind(1 + int(k)%6)
		x, err := extract.New(kind, bytes.NewReader(data), extract.Options{MaxDepth: 16, MaxTokenBytes: 1 << 16})
		if err != nil {
			t.Fatalf("New(%v): %v", kind, err)
		}
		out, err := io.ReadAll(x)
		if err != nil {
			var oe *outcome.Error
			if !errors.As(err, &oe) || oe.Kind != outcome.Rejected {
				t.Fatalf("%v: error %v, want a rejection", kind, err)
			}
			return
		}
		if !utf8.Valid(out) {
			t.Fatalf("%v: output is not UTF-8: %q", kind, out)
		}
		for i, c := range out {
			if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
				t.Fatalf("%v: control character %#x at %d in %q", kind, c, i, out)
			}
		}
		if bytes.Contains(out, []byte("\n\n\n")) {
			t.Fatalf("%v: more than one blank line in %q", kind, out)
		}
		if len(bytes.TrimSpace(out)) == 0 {
			t.Fatalf("%v: no text but no rejection", kind)
		}
	})
}
