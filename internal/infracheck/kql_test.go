package infracheck

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// The log alert rules' queries, evaluated on one trace's Message as Log
// Analytics would. Only what the rules use is understood, and exactly:
//
//	AppTraces | where <predicate> [| where <predicate>]... [| project ...]
//	predicate: term {or term}; term: factor {and factor}
//	factor: not(<predicate>) | (<predicate>) | Message <op> "<string>"
//	op: contains, !contains (case-insensitive), contains_cs, !contains_cs,
//	    matches regex (RE2, which Kusto's regex is)
//
// Anything else (another table, column or operator, has with its term
// rules) is an error, so that a rule the evaluator cannot judge faithfully
// fails the test instead of passing it.

// kqlFilter is a parsed query: its where predicates, all of which must hold.
type kqlFilter []kqlPredicate

type kqlPredicate func(message string) bool

// matches reports whether a trace with this Message passes every where.
func (f kqlFilter) matches(message string) bool {
	for _, p := range f {
		if !p(message) {
			return false
		}
	}
	return true
}

// parseKQL parses query into a filter over AppTraces.Message.
func parseKQL(query string) (kqlFilter, error) {
	toks, err := kqlTokens(query)
	if err != nil {
		return nil, err
	}
	p := &kqlParser{toks: toks}
	if t := p.next(); t != "AppTraces" {
		return nil, fmt.Errorf("query reads %q, want AppTraces", t)
	}
	var f kqlFilter
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
			// Columns only: the filter is decided by the wheres.
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

type kqlParser struct {
	toks []string
	i    int
}

func (p *kqlParser) done() bool { return p.i >= len(p.toks) }

func (p *kqlParser) peek() string {
	if p.done() {
		return ""
	}
	return p.toks[p.i]
}

func (p *kqlParser) next() string {
	t := p.peek()
	p.i++
	return t
}

func (p *kqlParser) predicate() (kqlPredicate, error) {
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

func (p *kqlParser) term() (kqlPredicate, error) {
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

func (p *kqlParser) factor() (kqlPredicate, error) {
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

// kqlTokens splits a query into tokens; a string literal becomes "\x00"
// followed by its value ("..." and '...' with backslash escapes, @"..."
// verbatim).
func kqlTokens(q string) ([]string, error) {
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
