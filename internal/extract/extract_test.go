package extract_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/offpath/offpath/internal/extract"
	"github.com/offpath/offpath/internal/outcome"
)

// text extracts all of in.
func text(t testing.TB, kind extract.Kind, r io.Reader, opts extract.Options) (string, error) {
	t.Helper()
	x, err := extract.New(kind, r, opts)
	if err != nil {
		t.Fatalf("New(%v): %v", kind, err)
	}
	b, err := io.ReadAll(x)
	return string(b), err
}

func TestReader_Kinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind extract.Kind
		in   string
		want string
	}{
		{"text", extract.Text, "Hello\r\nworld\r\n\r\n\r\n\r\nNext para   \n\n", "Hello\nworld\n\nNext para"},
		{"text BOM and CR", extract.Text, "\ufeffone\rtwo\r\n", "one\ntwo"},
		{"text controls dropped", extract.Text, "a\x01b\x7fc\td\fe" + strings.Repeat(" text", 20), "abc\td\ne" + strings.Repeat(" text", 20)},
		{"text leading blank lines", extract.Text, "\n\n\n  indented\n", "indented"},
		{"text keeps indentation", extract.Text, "a\n    b", "a\n    b"},
		{"text collapses blanks inside lines", extract.Text, "a    b \t c\td", "a b c\td"},
		{"text with a few controls", extract.Text, "a\x01b\x02c", "abc"},
		{"markdown heading", extract.Markdown, "# Title #\nbody", "Title\n\nbody"},
		{"markdown emphasis", extract.Markdown, "Some *em*, **bold**, _it_ and ~~gone~~ text", "Some em, bold, it and gone text"},
		{"markdown literals", extract.Markdown, "snake_case and 2 * 3 and a ~ b", "snake_case and 2 * 3 and a ~ b"},
		{"markdown code span", extract.Markdown, "run `go test ./...` now", "run go test ./... now"},
		{"markdown double code span", extract.Markdown, "``a ` b``", "a ` b"},
		{"markdown links", extract.Markdown, "see [the docs](https://x.y/z \"t\") or [ref][1] or ![a cat](cat.png)", "see the docs or ref or a cat"},
		{"markdown autolink", extract.Markdown, "mail <a@b.example> or <https://x.y>", "mail a@b.example or https://x.y"},
		{"markdown inline html", extract.Markdown, "a <b>bold</b> <br/> word", "a bold word"},
		{"markdown comment", extract.Markdown, "a <!-- hidden\nstill hidden -->b", "a\nb"},
		{"markdown escapes", extract.Markdown, `\*not em\* \[x\]`, "*not em* [x]"},
		{"markdown entities", extract.Markdown, "AT&amp;T &copy; &bogus; & x", "AT&T © &bogus; & x"},
		{"markdown fence", extract.Markdown, "```go\nfunc *main() {}\n```\nafter", "func *main() {}\n\nafter"},
		{"markdown tilde fence", extract.Markdown, "~~~\n# not a heading\n~~~", "# not a heading"},
		{"markdown lists", extract.Markdown, "- one\n* two\n+ three\n1. four\n2) five", "one\ntwo\nthree\nfour\nfive"},
		{"markdown quote", extract.Markdown, "> > quoted", "quoted"},
		{"markdown table", extract.Markdown, "| a | b |\n|:--|--:|\n| 1 | 2 |", "a | b\n1 | 2"},
		{"markdown rule and setext", extract.Markdown, "Title\n=====\ntext\n\n---\n\nmore", "Title\n\ntext\n\nmore"},
		{"markdown front matter", extract.Markdown, "---\ntitle: x\n---\nbody", "body"},
		{"markdown reference definition", extract.Markdown, "text\n[1]: https://x.y\n", "text"},
		{"markdown indented code", extract.Markdown, "para\n\n    code *x*", "para\n\ncode *x*"},
		{"html", extract.HTML, "<html><head><title>T</title></head><body><h1>Head</h1><p>Para &amp; one<br>line two</p></body></html>", "T\n\nHead\n\nPara & one\nline two"},
		{"html script and style", extract.HTML, "<p>a</p><script>var x = '<p>no</p>';</script><style>p{color:red}</style><p>b</p>", "a\n\nb"},
		{"html hidden subtrees", extract.HTML, "<noscript><p>enable js</p></noscript><template><p>t</p></template><svg><text>s</text></svg>visible", "visible"},
		{"html nested hidden", extract.HTML, "<svg><svg></svg><text>x</text></svg>shown", "shown"},
		{"html whitespace", extract.HTML, "<p>  many\n\n   spaces\there </p>", "many spaces here"},
		{"html inline", extract.HTML, "<p>one <b>two</b><i>three</i> four</p>", "one twothree four"},
		{"html pre", extract.HTML, "<pre>  keep\n  this</pre>", "keep\n  this"},
		{"html entities", extract.HTML, "&lt;tag&gt; &eacute; &#x4e2d; &#8212; &nbsp;x", "<tag> é 中 — \u00a0x"},
		{"html lists and tables", extract.HTML, "<ul><li>a</li><li>b</li></ul><table><tr><td>1</td><td>2</td></tr><tr><td>3</td></tr></table>", "a\nb\n\n1 2\n3"},
		{"html comments", extract.HTML, "a<!-- <p>hidden</p> -->b", "ab"},
		{"html unclosed tags", extract.HTML, "<div><p>x<p>y", "x\n\ny"},
		{"json", extract.JSON, `{"title":"Doc","author":{"name":"Ada","age":36},"tags":["x","y"],"n":null,"ok":true}`, "title: Doc\nauthor.name: Ada\ntags: x\ntags: y"},
		{"json lines", extract.JSON, "{\"a\":\"one\"}\n{\"a\":\"two\"}\n", "a: one\n\na: two"},
		{"json array of records", extract.JSON, `[{"q":"one?"},{"q":"two?"}]`, "q: one?\n\nq: two?"},
		{"json deep path", extract.JSON, `{"a":{"b":{"c":{"d":"v"}}}}`, "b.c.d: v"},
		{"json bare string", extract.JSON, `"just text"`, "just text"},
		{"json escapes", extract.JSON, `{"k":"line\nbreak \u00e9 \ud83d\ude00"}`, "k: line\nbreak é 😀"},
		{"csv", extract.CSV, "name,city\nAda,London\nBob,\"Oslo, NO\"\n", "name: Ada; city: London\n\nname: Bob; city: Oslo, NO"},
		{"csv ragged", extract.CSV, "a,b\n1\n1,2,3\n", "a: 1\n\na: 1; b: 2; 3"},
		{"csv header only", extract.CSV, "a,b\n", "a; b"},
		{"csv multiline field", extract.CSV, "note\n\"line one\nline two\"\n", "note: line one\nline two"},
		{"tsv", extract.TSV, "a\tb\n1\t2\n", "a: 1; b: 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := text(t, tt.kind, strings.NewReader(tt.in), extract.Options{})
			if err != nil || got != tt.want {
				t.Errorf("extract %v %q =\n%q, %v\nwant\n%q", tt.kind, tt.in, got, err, tt.want)
			}
			// The same text, a byte at a time in and out.
			x, err := extract.New(tt.kind, iotest.OneByteReader(strings.NewReader(tt.in)), extract.Options{})
			if err != nil {
				t.Fatal(err)
			}
			small, err := io.ReadAll(iotest.OneByteReader(x))
			if err != nil || string(small) != tt.want {
				t.Errorf("one byte at a time: %q, %v; want %q", small, err, tt.want)
			}
		})
	}
}

func TestReader_Rejections(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("ok text ", 20000) // 160 KB of good text first
	tests := []struct {
		name   string
		kind   extract.Kind
		in     string
		opts   extract.Options
		reason string
	}{
		{"empty", extract.Text, "", extract.Options{}, extract.ReasonEmpty},
		{"whitespace only", extract.Text, " \n\t\r\n  ", extract.Options{}, extract.ReasonEmpty},
		{"BOM only", extract.Text, "\ufeff", extract.Options{}, extract.ReasonEmpty},
		{"html without visible text", extract.HTML, "<script>x()</script><style>a{}</style>", extract.Options{}, extract.ReasonEmpty},
		{"json without strings", extract.JSON, `{"a":1,"b":[true,null]}`, extract.Options{}, extract.ReasonEmpty},
		{"csv header and empty rows", extract.CSV, "a,b\n,\n", extract.Options{}, extract.ReasonEmpty},
		{"NUL at start", extract.Text, "\x00abc", extract.Options{}, extract.ReasonBinary},
		{"NUL after 160 KB", extract.Text, long + "\x00", extract.Options{}, extract.ReasonBinary},
		{"control characters", extract.Text, strings.Repeat("ab\x01\x02\x03", 100), extract.Options{}, extract.ReasonBinary},
		{"PDF named .txt", extract.Text, "%PDF-1.7\n1 0 obj", extract.Options{}, extract.ReasonUnsupported},
		{"PNG named .txt", extract.Text, "\x89PNG\r\n\x1a\n....", extract.Options{}, extract.ReasonBinary},
		{"ZIP named .md", extract.Markdown, "PK\x03\x04rest", extract.Options{}, extract.ReasonBinary},
		{"UTF-16 LE", extract.Text, "\xff\xfeh\x00i\x00", extract.Options{}, extract.ReasonNotUTF8},
		{"UTF-16 BE", extract.Text, "\xfe\xff\x00h\x00i", extract.Options{}, extract.ReasonNotUTF8},
		{"Latin-1", extract.Text, "caf\xe9 au lait", extract.Options{}, extract.ReasonNotUTF8},
		{"invalid after 160 KB", extract.Text, long + "\xc3\x28", extract.Options{}, extract.ReasonNotUTF8},
		{"truncated rune at the end", extract.Text, "abc\xe6\xbc", extract.Options{}, extract.ReasonNotUTF8},
		{"overlong encoding", extract.Text, "a\xc0\xafb", extract.Options{}, extract.ReasonNotUTF8},
		{"surrogate", extract.Text, "a\xed\xa0\x80b", extract.Options{}, extract.ReasonNotUTF8},
		{"invalid in HTML", extract.HTML, "<p>caf\xe9</p>", extract.Options{}, extract.ReasonNotUTF8},
		{"invalid in JSON string", extract.JSON, "{\"a\":\"caf\xe9\"}", extract.Options{}, extract.ReasonNotUTF8},
		{"too large", extract.Text, long, extract.Options{MaxInputBytes: 1000}, extract.ReasonTooLarge},
		{"json too deep", extract.JSON, strings.Repeat("[", 100000), extract.Options{}, extract.ReasonTooDeep},
		{"json too deep objects", extract.JSON, strings.Repeat(`{"a":`, 200) + `"x"` + strings.Repeat("}", 200), extract.Options{}, extract.ReasonTooDeep},
		{"json within a small depth", extract.JSON, `[[["x"]]]`, extract.Options{MaxDepth: 2}, extract.ReasonTooDeep},
		{"json syntax", extract.JSON, `{"a":"b",}`, extract.Options{}, extract.ReasonMalformed},
		{"json truncated", extract.JSON, `{"a":["b"`, extract.Options{}, extract.ReasonMalformed},
		{"json garbage", extract.JSON, `hello`, extract.Options{}, extract.ReasonMalformed},
		{"html token too large", extract.HTML, "<p>" + long + "</p>", extract.Options{MaxTokenBytes: 4096}, extract.ReasonTooLarge},
		{"json string too large", extract.JSON, `{"k":"` + long + `"}`, extract.Options{MaxTokenBytes: 4096}, extract.ReasonTooLarge},
		{"json string with escaped quotes too large", extract.JSON, `["` + strings.Repeat(`a\"`, 2000) + `"]`, extract.Options{MaxTokenBytes: 4096}, extract.ReasonTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := text(t, tt.kind, strings.NewReader(tt.in), tt.opts)
			var oe *outcome.Error
			if !errors.As(err, &oe) || oe.Kind != outcome.Rejected || oe.Reason != tt.reason {
				t.Errorf("extract %v = %v, want rejection %q", tt.kind, err, tt.reason)
			}
		})
	}
}

func TestReader_SourceErrorIsTransient(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	for _, kind := range []extract.Kind{extract.Text, extract.Markdown, extract.HTML, extract.JSON, extract.CSV} {
		r := io.MultiReader(strings.NewReader(`{"a":"some text"} , `), iotest.ErrReader(boom))
		_, err := text(t, kind, r, extract.Options{})
		if !errors.Is(err, boom) || outcome.Of(err) != outcome.Transient {
			t.Errorf("%v: error %v (%v), want the source's error, transient", kind, err, outcome.Of(err))
		}
	}
}

func TestReader_LongLines(t *testing.T) {
	t.Parallel()
	size := 10 << 20 // one line of 10 MB
	if raceEnabled {
		size /= 8 // the same single-goroutine paths, at a size the race detector gets through quickly
	}
	line := strings.Repeat("word *x* ", size/9)
	// Kinds that hold a token whole get a shorter one: what is tested is
	// that it is not cut or lost.
	token := line[:size/5]
	tests := []struct {
		name string
		kind extract.Kind
		in   string
	}{
		{"text", extract.Text, line},
		{"markdown", extract.Markdown, line},
		{"html text node", extract.HTML, "<p>" + token + "</p>"},
		{"json string", extract.JSON, `{"k":"` + token + `"}`},
		{"csv field", extract.CSV, "h\n" + token},
		// Would take minutes if each "[" or "<" searched the rest of the line.
		{"markdown brackets", extract.Markdown, strings.Repeat("[<", size/16)},
		{"markdown backticks", extract.Markdown, strings.Repeat("`a``b", size/40)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := text(t, tt.kind, strings.NewReader(tt.in), extract.Options{})
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if len(got) < len(tt.in)/3 {
				t.Errorf("%d bytes of text from %d", len(got), len(tt.in))
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, contentType string
		want                    extract.Kind
		reason                  string
	}{
		{"txt", "a/b.txt", "", extract.Text, ""},
		{"uppercase", "a/B.MD", "", extract.Markdown, ""},
		{"html", "x.htm", "application/octet-stream", extract.HTML, ""},
		{"jsonl", "x.jsonl", "", extract.JSON, ""},
		{"tsv", "x.tsv", "", extract.TSV, ""},
		{"by content type", "README", "text/markdown; charset=utf-8", extract.Markdown, ""},
		{"pdf", "x.pdf", "application/pdf", 0, extract.ReasonUnsupported},
		{"pdf content type", "noext", "application/pdf", 0, extract.ReasonUnsupported},
		{"docx", "x.docx", "", 0, extract.ReasonUnsupported},
		{"nothing", "noext", "", 0, extract.ReasonUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := extract.KindOf(tt.file, tt.contentType)
			if tt.reason == "" {
				if err != nil || got != tt.want {
					t.Errorf("KindOf(%q, %q) = %v, %v; want %v", tt.file, tt.contentType, got, err, tt.want)
				}
				return
			}
			var oe *outcome.Error
			if !errors.As(err, &oe) || oe.Reason != tt.reason {
				t.Errorf("KindOf(%q, %q) = %v, %v; want rejection %q", tt.file, tt.contentType, got, err, tt.reason)
			}
		})
	}
}
