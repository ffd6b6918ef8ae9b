package blobwatch

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Pattern is a parsed blob trigger path such as "incoming/{tenant}/{name}":
// a container, then a pattern for blob names in it. It is immutable and safe
// for concurrent use. The zero Pattern matches nothing.
type Pattern struct {
	path      string
	container string
	prefix    string         // the literal start of every matching blob name
	tokens    []string       // token names, in order
	parts     []part         // the blob name pattern, piece by piece
	re        *regexp.Regexp // nil: the pattern is the container alone
}

// part is a piece of a blob name pattern: literal text, or a token name.
type part struct {
	text    string
	isToken bool
}

// ParsePath parses a blob trigger path. The text up to the first "/" is the
// container, which takes no tokens. The rest is the blob name pattern:
// literal text, "{token}" parts (letters, digits and "_", each name once),
// and "{{" and "}}" for literal braces. A path without a blob name pattern
// ("incoming" or "incoming/") matches every blob in the container.
//
// Tokens match the way the host's BindingTemplateSource matches them: the
// whole name must match (anchored), a token matches any run of characters
// but a newline, "/" included, and each token is greedy, taking as much as
// still lets the rest match, left to right. So with "incoming/{tenant}/{name}"
// the blob "acme/reports/q1.pdf" binds tenant "acme/reports" and name
// "q1.pdf", and with "{blobname}.{blobextension}" the blob "a.tar.gz" binds
// "a.tar" and "gz".
func ParsePath(path string) (Pattern, error) {
	if !utf8.ValidString(path) {
		return Pattern{}, fmt.Errorf("blob path %q: not valid UTF-8", path)
	}
	container, name, _ := strings.Cut(path, "/")
	if err := checkContainer(container); err != nil {
		return Pattern{}, fmt.Errorf("blob path %q: %w", path, err)
	}
	p := Pattern{path: path, container: container}
	if name == "" {
		return p, nil
	}
	var (
		re      strings.Builder
		literal strings.Builder
		seen    = map[string]bool{}
	)
	re.WriteString("^")
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case (c == '{' || c == '}') && i+1 < len(name) && name[i+1] == c:
			literal.WriteByte(c)
			i++
		case c == '}':
			return Pattern{}, fmt.Errorf("blob path %q: unbalanced \"}\" at offset %d (write \"}}\" for a literal brace)", path, len(container)+1+i)
		case c == '{':
			end := strings.IndexAny(name[i+1:], "{}")
			if end < 0 || name[i+1+end] == '{' {
				return Pattern{}, fmt.Errorf("blob path %q: unbalanced \"{\" at offset %d (write \"{{\" for a literal brace)", path, len(container)+1+i)
			}
			token := name[i+1 : i+1+end]
			if err := checkToken(token, seen); err != nil {
				return Pattern{}, fmt.Errorf("blob path %q: %w", path, err)
			}
			if p.tokens == nil {
				p.prefix = literal.String()
			}
			re.WriteString(regexp.QuoteMeta(literal.String()))
			p.parts = append(p.parts, part{text: literal.String()}, part{text: token, isToken: true})
			literal.Reset()
			re.WriteString("(?P<" + token + ">.*)")
			p.tokens = append(p.tokens, token)
			i += end + 1
		default:
			literal.WriteByte(c)
		}
	}
	if p.tokens == nil {
		p.prefix = literal.String()
	}
	re.WriteString(regexp.QuoteMeta(literal.String()))
	p.parts = append(p.parts, part{text: literal.String()})
	re.WriteString("$")
	compiled, err := regexp.Compile(re.String())
	if err != nil {
		return Pattern{}, fmt.Errorf("blob path %q: %w", path, err)
	}
	p.re = compiled
	return p, nil
}

// checkContainer applies Azure's container naming rules: 3 to 63 lowercase
// letters, digits and single hyphens, starting and ending with a letter or
// digit; or one of the special containers $root, $web and $logs.
func checkContainer(c string) error {
	switch {
	case c == "":
		return errors.New("no container: a blob trigger path starts with the container, as in \"incoming/{name}\"")
	case strings.ContainsAny(c, "{}"):
		return fmt.Errorf("container %q: the container part cannot hold tokens", c)
	case c == "$root" || c == "$web" || c == "$logs":
		return nil
	case len(c) < 3 || len(c) > 63:
		return fmt.Errorf("container %q: a container name has 3 to 63 characters", c)
	case strings.Contains(c, "--") || c[0] == '-' || c[len(c)-1] == '-':
		return fmt.Errorf("container %q: hyphens must be single and inside the name", c)
	}
	for _, r := range c {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("container %q: %q is not allowed; use lowercase letters, digits and hyphens", c, r)
		}
	}
	return nil
}

// checkToken accepts a token name the host can capture: an identifier
// without dots (the host refuses "{a.b}" in trigger paths), used once.
func checkToken(token string, seen map[string]bool) error {
	if token == "" {
		return errors.New("empty token \"{}\"")
	}
	for i, r := range token {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return fmt.Errorf("token {%s}: a token name is letters, digits and \"_\", not starting with a digit", token)
		}
	}
	if seen[strings.ToLower(token)] {
		return fmt.Errorf("token {%s} appears twice", token)
	}
	seen[strings.ToLower(token)] = true
	return nil
}

// Container returns the container the pattern watches.
func (p Pattern) Container() string { return p.container }

// Prefix returns the literal text every matching blob name starts with, for
// listing with a prefix.
func (p Pattern) Prefix() string { return p.prefix }

// Tokens returns the names of the pattern's tokens, in order.
func (p Pattern) Tokens() []string { return append([]string(nil), p.tokens...) }

// String returns the path the pattern was parsed from.
func (p Pattern) String() string { return p.path }

// Match reports whether blobName (a name inside the pattern's container)
// matches, and if so the value bound to each token.
func (p Pattern) Match(blobName string) (map[string]string, bool) {
	if p.container == "" {
		return nil, false
	}
	if p.re == nil {
		return map[string]string{}, true
	}
	m := p.re.FindStringSubmatch(blobName)
	if m == nil {
		return nil, false
	}
	tokens := make(map[string]string, len(p.tokens))
	for i, name := range p.tokens {
		tokens[name] = m[i+1]
	}
	return tokens, true
}
