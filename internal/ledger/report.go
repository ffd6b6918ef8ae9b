package ledger

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

func (l *Line) add(r *Rollup) {
	l.Add(r.Usage)
	l.Abandoned.Add(r.Abandoned)
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

// Summarize sums entries (all of one tenant and month) into a Report: the
// report a full scan of the month's rows gives, which its rollups' report
// (SummarizeRollups) must equal.
func Summarize(tenantID string, m Month, entries []Entry) Report {
	rolled := Roll(entries)
	rollups := make([]Rollup, 0, len(rolled))
	for _, r := range rolled {
		rollups = append(rollups, r)
	}
	return SummarizeRollups(tenantID, m, rollups)
}
