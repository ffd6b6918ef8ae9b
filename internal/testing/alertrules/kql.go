package alertrules

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Filter is a parsed query: its where predicates, all of which must hold.
type Filter []predicate

type predicate func(message string) bool

// Matches reports whether a trace with this Message passes every where.
func (f Filter) Matches(message string) bool {
	for _, p := range f {
		if !p(message) {
			return false
		}
	}
	return true
}

// ParseQuery parses a log alert query into a Filter over AppTraces.Message.
func ParseQuery(query string) (Filter, error) {
	toks, err := tokens(query)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	if t := p.next(); t != "AppTraces" {
		return nil, fmt.Errorf("query reads %q, want AppTraces", t)
	}
	var f Filter
	for !p.done() {
		if t := p.next(); t != "|" {
			return nil, fmt.Errorf("want | at %q", t)
		}
		switch op := p.next(); op {
		case "where":
			pred, err := p.predicate()
			if err != nil {
				return nil, err
			}
			f = append(f, pred)
		case "project":
			// Columns only: the wheres decide.
			for !p.done() && p.peek() != "|" {
				p.next()
			}
		default:
			return nil, fmt.Errorf("operator %q is not understood", op)
		}
	}
	if len(f) == 0 {
		return nil, errors.New("query has no where: it would match every trace")
	}
	return f, nil
}

type parser struct {
	toks []string
	i    int
}

func (p *parser) done() bool { return p.i >= len(p.toks) }

func (p *parser) peek() string {
	if p.done() {
		return ""
	}
	return p.toks[p.i]
}

func (p *parser) next() string {
	t := p.peek()
	p.i++
	return t
}

func (p *parser) predicate() (predicate, error) {
	left, err := p.term()
	if err != nil {
		return nil, err
	}
	for p.peek() == "or" {
		p.next()
		right, err := p.term()
		if err != nil {
			return nil, err
		}
		l := left
		left = func(m string) bool { return l(m) || right(m) }
	}
	return left, nil
}

func (p *parser) term() (predicate, error) {
	left, err := p.factor()
	if err != nil {
		return nil, err
	}
	for p.peek() == "and" {
		p.next()
		right, err := p.factor()
		if err != nil {
			return nil, err
		}
		l := left
		left = func(m string) bool { return l(m) && right(m) }
	}
	return left, nil
}

func (p *parser) factor() (predicate, error) {
	switch t := p.next(); t {
	case "not":
		if p.next() != "(" {
			return nil, errors.New("not without (")
		}
		inner, err := p.predicate()
		if err != nil {
			return nil, err
		}
		if p.next() != ")" {
			return nil, errors.New("not( without )")
		}
		return func(m string) bool { return !inner(m) }, nil
	case "(":
		inner, err := p.predicate()
		if err != nil {
			return nil, err
		}
		if p.next() != ")" {
			return nil, errors.New("( without )")
		}
		return inner, nil
	case "Message":
	default:
		return nil, fmt.Errorf("column %q is not understood (only Message)", t)
	}
	op := p.next()
	if op == "matches" {
		if p.next() != "regex" {
			return nil, errors.New("matches without regex")
		}
		op = "matches regex"
	}
	lit := p.next()
	if !strings.HasPrefix(lit, "\x00") {
		return nil, fmt.Errorf("%s needs a string literal, got %q", op, lit)
	}
	s := lit[1:]
	switch op {
	case "contains":
		return func(m string) bool { return strings.Contains(strings.ToLower(m), strings.ToLower(s)) }, nil
	case "!contains":
		return func(m string) bool { return !strings.Contains(strings.ToLower(m), strings.ToLower(s)) }, nil
	case "contains_cs":
		return func(m string) bool { return strings.Contains(m, s) }, nil
	case "!contains_cs":
		return func(m string) bool { return !strings.Contains(m, s) }, nil
	case "matches regex":
		re, err := regexp.Compile(s)
		if err != nil {
			return nil, fmt.Errorf("regex %q: %w", s, err)
		}
		return re.MatchString, nil
	}
	return nil, fmt.Errorf("operator %q is not understood", op)
}

// tokens splits a query into tokens; a string literal becomes "\x00"
// followed by its value ("..." and '...' with backslash escapes, @"..."
// verbatim).
func tokens(q string) ([]string, error) {
	var out []string
	r := []rune(q)
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '|' || c == '(' || c == ')' || c == ',':
			out = append(out, string(c))
			i++
		case c == '"' || c == '\'' || (c == '@' && i+1 < len(r) && (r[i+1] == '"' || r[i+1] == '\'')):
			verbatim := c == '@'
			if verbatim {
				i++
			}
			quote := r[i]
			i++
			var b strings.Builder
			closed := false
			for i < len(r) {
				ch := r[i]
				if ch == quote {
					closed = true
					i++
					break
				}
				if ch == '\\' && !verbatim {
					if i+1 >= len(r) {
						return nil, errors.New("string literal ends in a backslash")
					}
					switch e := r[i+1]; e {
					case '\\', '"', '\'':
						b.WriteRune(e)
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					default:
						return nil, fmt.Errorf("escape \\%c in a string literal is not understood", e)
					}
					i += 2
					continue
				}
				b.WriteRune(ch)
				i++
			}
			if !closed {
				return nil, errors.New("unterminated string literal")
			}
			out = append(out, "\x00"+b.String())
		case c == '!' || c == '_' || unicode.IsLetter(c):
			j := i + 1
			for j < len(r) && (r[j] == '_' || unicode.IsLetter(r[j]) || unicode.IsDigit(r[j])) {
				j++
			}
			out = append(out, string(r[i:j]))
			i = j
		default:
			return nil, fmt.Errorf("character %q at %d is not understood", c, i)
		}
	}
	return out, nil
}
