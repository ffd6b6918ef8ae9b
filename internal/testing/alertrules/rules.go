package alertrules

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Bicep is the file that holds the rules, relative to the repository root.
const Bicep = "infra/modules/alerts.bicep"

// Rule is one log alert rule: its resource name and its query.
type Rule struct {
	Name   string
	Query  string
	filter Filter
}

// Matches reports whether the rule's query selects a trace with this
// Message.
func (r Rule) Matches(message string) bool { return r.filter.Matches(message) }

// Fired returns the names of the rules that select message.
func Fired(rules []Rule, message string) []string {
	var out []string
	for _, r := range rules {
		if r.Matches(message) {
			out = append(out, r.Name)
		}
	}
	return out
}

// Load reads the rules of the repository at root.
func Load(root string) ([]Rule, error) {
	text, err := os.ReadFile(filepath.Join(root, Bicep))
	if err != nil {
		return nil, err
	}
	return Parse(string(text))
}

var (
	nameLine  = regexp.MustCompile(`^\s*name:\s*('.*')\s*$`)
	queryLine = regexp.MustCompile(`^\s*query:\s*(.+?)\s*$`)
)

// Parse reads the log alert rules of alerts.bicep's text: the entries of
// alertEvents (rule "offpath-<name>", deployed by the loop that must pass
// a.query through unchanged) and every scheduled query rule written out
// with a literal query.
func Parse(text string) ([]Rule, error) {
	if !strings.Contains(text, "query: a.query") || !strings.Contains(text, "name: 'offpath-${a.name}'") {
		return nil, errors.New("alerts.bicep: the alertEvents loop must deploy each entry as name 'offpath-${a.name}' with query: a.query")
	}
	var rules []Rule
	var errs []error
	inEvents, name := false, ""
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "var alertEvents = ["):
			inEvents = true
			continue
		case inEvents && line == "]":
			inEvents = false
			continue
		}
		if m := nameLine.FindStringSubmatch(line); m != nil {
			if n, err := bicepString(m[1]); err == nil {
				name = n
				if inEvents {
					name = "offpath-" + n
				}
			}
			continue
		}
		m := queryLine.FindStringSubmatch(line)
		if m == nil || m[1] == "a.query" {
			continue
		}
		q, err := bicepString(m[1])
		if err != nil {
			errs = append(errs, fmt.Errorf("alerts.bicep: query of %s: %w", name, err))
			continue
		}
		f, err := ParseQuery(q)
		if err != nil {
			errs = append(errs, fmt.Errorf("alerts.bicep: query of %s: %w", name, err))
			continue
		}
		rules = append(rules, Rule{Name: name, Query: q, filter: f})
	}
	return rules, errors.Join(errs...)
}

// bicepString decodes a single-quoted Bicep string literal. Interpolation
// is refused: the query must be what the portal shows.
func bicepString(lit string) (string, error) {
	if len(lit) < 2 || lit[0] != '\'' || lit[len(lit)-1] != '\'' {
		return "", fmt.Errorf("%.40s is not a single-quoted string literal", lit)
	}
	s := lit[1 : len(lit)-1]
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case '\\', '\'', '$':
				b.WriteByte(s[i])
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			default:
				return "", fmt.Errorf("escape \\%c is not a Bicep escape", s[i])
			}
		case c == '\'':
			return "", errors.New("unescaped quote inside the literal")
		case c == '$' && i+1 < len(s) && s[i+1] == '{':
			return "", errors.New("interpolation: write the query out whole")
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
