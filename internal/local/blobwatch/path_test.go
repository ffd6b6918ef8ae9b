package blobwatch

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

func TestPattern_Match(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		path   string
		blob   string
		want   map[string]string // nil: no match
		prefix string
	}{
		{"name", "incoming/{name}", "a.txt", map[string]string{"name": "a.txt"}, ""},
		{"name spans slashes", "incoming/{name}", "a/b/c.txt", map[string]string{"name": "a/b/c.txt"}, ""},
		{"tenant and name", "incoming/{tenant}/{name}", "acme/q1.pdf", map[string]string{"tenant": "acme", "name": "q1.pdf"}, ""},
		// The host's capture groups are greedy: the first token takes all
		// but the last segment.
		{"tenant is greedy like the host", "incoming/{tenant}/{name}", "acme/reports/q1.pdf", map[string]string{"tenant": "acme/reports", "name": "q1.pdf"}, ""},
		{"tenant needs a slash", "incoming/{tenant}/{name}", "q1.pdf", nil, ""},
		{"empty first segment", "incoming/{tenant}/{name}", "/q1.pdf", map[string]string{"tenant": "", "name": "q1.pdf"}, ""},
		{"suffix", "inbox/{name}.csv", "data.csv", map[string]string{"name": "data"}, ""},
		{"suffix is anchored", "inbox/{name}.csv", "data.csv.bak", nil, ""},
		{"suffix is case-sensitive", "inbox/{name}.csv", "data.CSV", nil, ""},
		{"suffix twice", "inbox/{name}.csv", "a.csv.csv", map[string]string{"name": "a.csv"}, ""},
		{"name and extension", "inbox/{blobname}.{blobextension}", "original-Blob1.txt", map[string]string{"blobname": "original-Blob1", "blobextension": "txt"}, ""},
		{"name and last extension", "inbox/{blobname}.{blobextension}", "a.tar.gz", map[string]string{"blobname": "a.tar", "blobextension": "gz"}, ""},
		{"no extension", "inbox/{blobname}.{blobextension}", "README", nil, ""},
		{"literal prefix", "inbox/original-{name}", "original-Blob1.txt", map[string]string{"name": "Blob1.txt"}, "original-"},
		{"literal prefix mismatch", "inbox/original-{name}", "copy-Blob1.txt", nil, "original-"},
		{"folder prefix", "inbox/docs/{tenant}/{name}", "docs/acme/x", map[string]string{"tenant": "acme", "name": "x"}, "docs/"},
		{"escaped braces", "inbox/{{literal}}/{name}", "{literal}/x", map[string]string{"name": "x"}, "{literal}/"},
		{"escaped braces are literal", "inbox/{{literal}}/{name}", "literal/x", nil, "{literal}/"},
		{"escaped closing brace", "inbox/a}}b/{name}", "a}b/x", map[string]string{"name": "x"}, "a}b/"},
		{"regexp characters are literal", "inbox/(a+b)[1].*{name}$", "(a+b)[1].*x$", map[string]string{"name": "x"}, "(a+b)[1].*"},
		{"regexp characters do not match", "inbox/(a+b)[1].*{name}", "aab1-x", nil, "(a+b)[1].*"},
		{"fixed name", "inbox/fixed.txt", "fixed.txt", map[string]string{}, "fixed.txt"},
		{"fixed name is anchored", "inbox/fixed.txt", "fixed.txt.1", nil, "fixed.txt"},
		{"container only", "inbox", "any/thing", map[string]string{}, ""},
		{"container and slash", "inbox/", "any", map[string]string{}, ""},
		{"adjacent tokens", "inbox/{a}{b}", "xy", map[string]string{"a": "xy", "b": ""}, ""},
		{"unicode", "inbox/{tenant}/{name}", "données/漢字 é.txt", map[string]string{"tenant": "données", "name": "漢字 é.txt"}, ""},
		{"dot segments are just text", "inbox/{name}", "a/../b", map[string]string{"name": "a/../b"}, ""},
		{"no newline in a token, as in .NET", "inbox/{name}", "a\nb", nil, ""},
		{"special container", "$root/{name}", "x", map[string]string{"name": "x"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := ParsePath(tt.path)
			if err != nil {
				t.Fatalf("ParsePath(%q) error: %v", tt.path, err)
			}
			got, ok := p.Match(tt.blob)
			if ok != (tt.want != nil) || !maps.Equal(got, tt.want) {
				t.Errorf("ParsePath(%q).Match(%q) = %v, %v; want %v", tt.path, tt.blob, got, ok, tt.want)
			}
			if p.Prefix() != tt.prefix {
				t.Errorf("ParsePath(%q).Prefix() = %q, want %q", tt.path, p.Prefix(), tt.prefix)
			}
			if ok && !strings.HasPrefix(tt.blob, p.Prefix()) {
				t.Errorf("ParsePath(%q) matched %q outside its prefix %q", tt.path, tt.blob, p.Prefix())
			}
		})
	}
}

func TestParsePath_Accessors(t *testing.T) {
	t.Parallel()
	p, err := ParsePath("incoming/{tenant}/{name}.csv")
	if err != nil {
		t.Fatal(err)
	}
	if p.Container() != "incoming" || p.String() != "incoming/{tenant}/{name}.csv" ||
		strings.Join(p.Tokens(), ",") != "tenant,name" {
		t.Fatalf("accessors: %q %q %v", p.Container(), p.String(), p.Tokens())
	}
	p.Tokens()[0] = "changed"
	if p.Tokens()[0] != "tenant" {
		t.Fatal("Tokens() exposes the pattern's slice")
	}
	if _, ok := (Pattern{}).Match("x"); ok {
		t.Fatal("the zero Pattern matched")
	}
}

func TestParsePath_Invalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		path string
		want string // substring of the error
	}{
		{"empty", "", "no container"},
		{"leading slash", "/{name}", "no container"},
		{"token in container", "{tenant}/x", "cannot hold tokens"},
		{"uppercase container", "Incoming/{name}", `'I'`},
		{"short container", "ab/{name}", "3 to 63"},
		{"long container", strings.Repeat("a", 64) + "/{name}", "3 to 63"},
		{"double hyphen", "in--coming/{name}", "hyphens"},
		{"leading hyphen", "-incoming/{name}", "hyphens"},
		{"underscore container", "in_coming/{name}", `'_'`},
		{"unclosed token", "incoming/{name", `unbalanced "{"`},
		{"unopened token", "incoming/name}", `unbalanced "}"`},
		{"nested token", "incoming/{a{b}}", `unbalanced "{"`},
		{"empty token", "incoming/{}", "empty token"},
		{"dotted token", "incoming/{a.b}", "{a.b}"},
		{"token starts with digit", "incoming/{1a}", "{1a}"},
		{"token with space", "incoming/{a b}", "{a b}"},
		{"token with hyphen", "incoming/{rand-guid}", "{rand-guid}"},
		{"token twice", "incoming/{name}/{Name}", "twice"},
		{"invalid UTF-8", "incoming/\x84{name}", "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := ParsePath(tt.path)
			if err == nil {
				t.Fatalf("ParsePath(%q) = %v, want an error", tt.path, p)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.path)) {
				t.Errorf("ParsePath(%q) error %q, want it to quote the path and mention %q", tt.path, err, tt.want)
			}
		})
	}
}

// expand rebuilds a blob name from the pattern and bound tokens.
func (p Pattern) expand(tokens map[string]string) string {
	var b strings.Builder
	for _, pt := range p.parts {
		if pt.isToken {
			b.WriteString(tokens[pt.text])
		} else {
			b.WriteString(pt.text)
		}
	}
	return b.String()
}

func FuzzMatch(f *testing.F) {
	for _, seed := range [][2]string{
		{"incoming/{tenant}/{name}", "acme/reports/q1.pdf"},
		{"inbox/{blobname}.{blobextension}", "a.tar.gz"},
		{"inbox/{{x}}{name}}}.csv", "{x}a}.csv"},
		{"inbox/original-{name}", "original-é/../x"},
		{"inbox", "anything"},
		{"inbox/{a}{b}{c}", "\x00\xff\n"},
		{"inbox/{name", "x"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, path, blob string) {
		p, err := ParsePath(path)
		if err != nil {
			return
		}
		tokens, ok := p.Match(blob)
		if !ok {
			return
		}
		if len(tokens) != len(p.Tokens()) {
			t.Fatalf("ParsePath(%q).Match(%q) bound %v, want tokens %v", path, blob, tokens, p.Tokens())
		}
		if !strings.HasPrefix(blob, p.Prefix()) {
			t.Fatalf("ParsePath(%q).Match(%q) matched outside prefix %q", path, blob, p.Prefix())
		}
		if p.re != nil {
			if got := p.expand(tokens); got != blob {
				t.Fatalf("ParsePath(%q).Match(%q) = %v, which expands to %q", path, blob, tokens, got)
			}
		}
	})
}
