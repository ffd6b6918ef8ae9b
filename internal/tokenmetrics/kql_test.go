package tokenmetrics_test

import (
	"fmt"
	"regexp"
	"strings"
)

// row is a customMetrics row, as far as the shipped query reads it.
type row struct {
	name       string
	valueSum   float64
	dimensions map[string]string
	columns    map[string]string // those extend adds
}

// runKQL evaluates the operators the shipped query uses (where name in,
// extend with coalesce of tostring(customDimensions[…]) and literals,
// summarize sum(valueSum) by columns) over rows, refusing any other, and
// returns the summed column keyed by the by-columns joined with "|".
func runKQL(query string, rows []row) (map[string]float64, error) {
	var (
		whereIn   = regexp.MustCompile(`^\| where name in \((.*)\)$`)
		extend    = regexp.MustCompile(`^\| extend (\w+) = coalesce\((.*)\)$`)
		summarize = regexp.MustCompile(`^\| summarize \w+ = sum\(valueSum\) by (.*)$`)
		dim       = regexp.MustCompile(`^tostring\(customDimensions\["([^"]+)"\]\)$`)
		quoted    = regexp.MustCompile(`^"([^"]*)"$`)
	)
	args := func(s string) []string {
		var out []string
		depth, start := 0, 0
		for i, r := range s {
			switch r {
			case '(', '[':
				depth++
			case ')', ']':
				depth--
			case ',':
				if depth == 0 {
					out = append(out, strings.TrimSpace(s[start:i]))
					start = i + 1
				}
			}
		}
		return append(out, strings.TrimSpace(s[start:]))
	}
	var out map[string]float64
	source := false
	for line := range strings.SplitSeq(query, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "//"):
		case line == "customMetrics":
			source = true
		case !source || out != nil:
			return nil, fmt.Errorf("unexpected %q", line)
		case whereIn.MatchString(line):
			names := map[string]bool{}
			for _, a := range args(whereIn.FindStringSubmatch(line)[1]) {
				m := quoted.FindStringSubmatch(a)
				if m == nil {
					return nil, fmt.Errorf("where: %q is not a string", a)
				}
				names[m[1]] = true
			}
			kept := rows[:0:0]
			for _, r := range rows {
				if names[r.name] {
					kept = append(kept, r)
				}
			}
			rows = kept
		case extend.MatchString(line):
			m := extend.FindStringSubmatch(line)
			col, exprs := m[1], args(m[2])
			for _, r := range rows {
				for _, e := range exprs {
					var v string
					if d := dim.FindStringSubmatch(e); d != nil {
						v = r.dimensions[d[1]]
					} else if q := quoted.FindStringSubmatch(e); q != nil {
						v = q[1]
					} else {
						return nil, fmt.Errorf("extend: cannot evaluate %q", e)
					}
					if v != "" { // coalesce: the first non-empty string
						r.columns[col] = v
						break
					}
				}
			}
		case summarize.MatchString(line):
			by := args(summarize.FindStringSubmatch(line)[1])
			out = map[string]float64{}
			for _, r := range rows {
				var key []string
				for _, c := range by {
					if c == "name" {
						key = append(key, r.name)
					} else {
						key = append(key, r.columns[c])
					}
				}
				out[strings.Join(key, "|")] += r.valueSum
			}
		default:
			return nil, fmt.Errorf("operator not supported: %q", line)
		}
	}
	if out == nil {
		return nil, fmt.Errorf("no summarize")
	}
	return out, nil
}
