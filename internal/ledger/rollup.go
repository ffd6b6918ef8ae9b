package ledger

import (
	"cmp"
	"slices"
	"time"
)

// A month's report is answered from rollups, not from its rows: a Rollup
// sums the rows of one tenant-month that share a day and a line, so that a
// report costs days × lines, however many rows the month holds. Every
// write of a row moves the rollups by the difference between the row as it
// was and as it is (RollDelta), in the same atomic write as the row
// (package tablestore), so that a rewrite, a retry or a redelivery moves
// them exactly once; and Roll rebuilds them from the rows.

// RollupKey names a rollup within a tenant-month: the UTC day of its rows'
// Recorded time ("YYYY-MM-DD"), and their line.
type RollupKey struct {
	Day        string
	Path       Path
	Alias      string
	Deployment string
}

// RollupKey is the rollup e counts in.
func (e *Entry) RollupKey() RollupKey {
	return RollupKey{Day: Day(e.Recorded), Path: e.Path, Alias: e.Alias, Deployment: e.Deployment}
}

// Day is t's UTC day, "YYYY-MM-DD".
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// Rollup sums the rows of one tenant-month under one RollupKey.
type Rollup struct {
	RollupKey
	Usage
	// Abandoned is the part of Usage of unfinished rows (Entry.Unfinished).
	Abandoned Usage
	// Rows is how many ledger rows the rollup sums.
	Rows int64
}

// IsZero reports a rollup that sums nothing.
func (r *Rollup) IsZero() bool {
	return r.Rows == 0 && r.Usage == (Usage{}) && r.Abandoned == (Usage{})
}

// Add adds o's sums (of the same key) to r.
func (r *Rollup) Add(o Rollup) {
	r.Usage.Add(o.Usage)
	r.Abandoned.Add(o.Abandoned)
	r.Rows += o.Rows
}

// Sub takes o's sums (of the same key) from r.
func (r *Rollup) Sub(o Rollup) {
	r.Usage.Sub(o.Usage)
	r.Abandoned.Sub(o.Abandoned)
	r.Rows -= o.Rows
}

// Share is what e adds to its rollup.
func (e *Entry) Share() Rollup {
	r := Rollup{RollupKey: e.RollupKey(), Usage: e.Usage, Rows: 1}
	if e.Unfinished {
		r.Abandoned = e.Usage
	}
	return r
}

// RollDelta is what replacing the row prev (nil: there was none) by next
// (nil: the row stays as it was) changes in the rollups: at most two keys,
// none when the write changes no sum.
func RollDelta(prev, next *Entry) map[RollupKey]Rollup {
	d := map[RollupKey]Rollup{}
	if prev != nil {
		s := prev.Share()
		var neg Rollup
		neg.Sub(s)
		neg.RollupKey = s.RollupKey
		fold(d, neg)
	}
	if next != nil {
		fold(d, next.Share())
	}
	for k, r := range d {
		if r.IsZero() {
			delete(d, k)
		}
	}
	return d
}

// Roll sums entries into their rollups: what the rollups of a month must
// hold, and what a rebuild writes.
func Roll(entries []Entry) map[RollupKey]Rollup {
	out := map[RollupKey]Rollup{}
	for i := range entries {
		fold(out, entries[i].Share())
	}
	return out
}

// fold adds s to the rollup of its key in m.
func fold(m map[RollupKey]Rollup, s Rollup) {
	r := m[s.RollupKey]
	r.RollupKey = s.RollupKey
	r.Add(s)
	m[s.RollupKey] = r
}

// SummarizeRollups sums the rollups of one tenant and month into a Report;
// rollups that sum no row are skipped.
func SummarizeRollups(tenantID string, m Month, rollups []Rollup) Report {
	r := Report{Tenant: tenantID, Month: m}
	type key struct {
		path              Path
		alias, deployment string
	}
	lines := map[key]*Line{}
	paths := map[Path]*Line{}
	for i := range rollups {
		u := &rollups[i]
		if u.Rows == 0 {
			continue
		}
		k := key{u.Path, u.Alias, u.Deployment}
		l := lines[k]
		if l == nil {
			l = &Line{Path: u.Path, Alias: u.Alias, Deployment: u.Deployment}
			lines[k] = l
		}
		l.add(u)
		p := paths[u.Path]
		if p == nil {
			p = &Line{Path: u.Path}
			paths[u.Path] = p
		}
		p.add(u)
		r.Total.Add(u.Usage)
		r.Abandoned.Add(u.Abandoned)
		r.Entries += int(u.Rows)
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
