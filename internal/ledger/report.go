package ledger

import (
	"cmp"
	"slices"
)

// Line is the usage of one path, alias and deployment in a month.
type Line struct {
	Path       Path
	Alias      string
	Deployment string
	Usage
	// Abandoned is the part of Usage spent by attempts that did not finish
	// (Entry.Unfinished): billed, but no result came of it.
	Abandoned Usage
}

func (l *Line) add(e *Entry) {
	l.Add(e.Usage)
	if e.Unfinished {
		l.Abandoned.Add(e.Usage)
	}
}

// CompletedTokens are the line's tokens spent by finished work.
func (l Line) CompletedTokens() int64 { return l.TotalTokens() - l.Abandoned.TotalTokens() }

// Report is a tenant's usage in one month.
type Report struct {
	Tenant string
	Month  Month
	// Lines are sorted by path, alias and deployment.
	Lines []Line
	// Paths are the subtotals per path, in Lines' order.
	Paths []Line
	Total Usage
	// Abandoned is the part of Total spent by attempts that did not finish.
	Abandoned Usage
	// Entries is how many ledger rows the report sums.
	Entries int
}

// Summarize sums entries (all of one tenant and month) into a Report.
func Summarize(tenantID string, m Month, entries []Entry) Report {
	r := Report{Tenant: tenantID, Month: m, Entries: len(entries)}
	type key struct {
		path              Path
		alias, deployment string
	}
	lines := map[key]*Line{}
	paths := map[Path]*Line{}
	for i := range entries {
		e := &entries[i]
		k := key{e.Path, e.Alias, e.Deployment}
		l := lines[k]
		if l == nil {
			l = &Line{Path: e.Path, Alias: e.Alias, Deployment: e.Deployment}
			lines[k] = l
		}
		l.add(e)
		p := paths[e.Path]
		if p == nil {
			p = &Line{Path: e.Path}
			paths[e.Path] = p
		}
		p.add(e)
		r.Total.Add(e.Usage)
		if e.Unfinished {
			r.Abandoned.Add(e.Usage)
		}
	}
	r.Lines = make([]Line, 0, len(lines))
	for _, l := range lines {
		r.Lines = append(r.Lines, *l)
	}
	slices.SortFunc(r.Lines, func(a, b Line) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Alias, b.Alias), cmp.Compare(a.Deployment, b.Deployment))
	})
	r.Paths = make([]Line, 0, len(paths))
	for _, p := range paths {
		r.Paths = append(r.Paths, *p)
	}
	slices.SortFunc(r.Paths, func(a, b Line) int { return cmp.Compare(a.Path, b.Path) })
	return r
}
