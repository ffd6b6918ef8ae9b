package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tenant"
)

func (c *cli) usage(ctx context.Context, args []string) error {
	fs := c.flags("usage", "[-tenant ID] [-month YYYY-MM] [-rebuild] [-csv | -json]",
		"Usage by path, alias and deployment, with totals and estimated cost (every tenant without -tenant; this month, UTC, without -month).\n"+
			"Reports read the month's rollups, kept with every ledger write; -rebuild first recomputes them from the ledger rows\n"+
			"(for months written by a version that kept none) and says what it corrected.")
	only := fs.String("tenant", "", "one tenant (default: every tenant)")
	monthText := fs.String("month", "", "YYYY-MM (default: this month, UTC)")
	asCSV := fs.Bool("csv", false, "print CSV")
	asJSON := fs.Bool("json", false, "print JSON")
	rebuild := fs.Bool("rebuild", false, "recompute the month's rollups from the ledger rows first")
	if pos, err := c.parse(fs, args); err != nil {
		return err
	} else if err := none(fs, pos, " (use -tenant and -month)"); err != nil {
		return err
	}
	if *asCSV && *asJSON {
		return usagef("usage: -csv and -json: choose one")
	}
	m := ledger.MonthOf(c.now())
	if *monthText != "" {
		var err error
		if m, err = ledger.ParseMonth(*monthText); err != nil {
			return usageError{fmt.Errorf("usage -month: %w", err)}
		}
	}
	if *only != "" {
		if err := tenant.ValidateID(*only); err != nil {
			return usageError{fmt.Errorf("usage -tenant: %w", err)}
		}
	}
	tenants, led, err := c.stores()
	if err != nil {
		return err
	}
	var list []tenant.Tenant
	if *only != "" {
		t, err := tenants.Get(ctx, *only)
		if err != nil {
			return err
		}
		list = []tenant.Tenant{t}
	} else if list, err = tenants.List(ctx); err != nil {
		return err
	}
	reports := make([]ledger.Report, 0, len(list))
	views := make([]ledger.ReportView, 0, len(list))
	for _, t := range list {
		if *rebuild {
			rb, err := led.Rebuild(ctx, t.ID, m)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.errOut, "%s %s: %d ledger rows in %d rollups, %d rollups corrected\n", t.ID, m, rb.Rows, rb.Rollups, rb.Corrected)
		}
		r, err := led.Report(ctx, t.ID, m)
		if err != nil {
			return err
		}
		reports = append(reports, r)
		views = append(views, r.View(t.MonthlyTokenBudget))
	}
	switch {
	case *asCSV:
		return ledger.WriteCSV(c.out, reports...)
	case *asJSON:
		return c.printJSON(views)
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(c.out, "no tenants, so no usage")
		return err
	}
	return table(c.out, m, reports, list)
}

// table prints reports aligned: one row per path, alias and deployment, a
// total per tenant, and a grand total when there are several tenants.
func table(w io.Writer, m ledger.Month, reports []ledger.Report, tenants []tenant.Tenant) error {
	g := &grid{right: []bool{false, false, false, false, true, true, true, true, true, true, true, true}}
	g.add("TENANT", "PATH", "ALIAS", "DEPLOYMENT", "PROMPT", "CACHED", "COMPLETION", "REASONING", "TOTAL", "REQUESTS", "REFUSALS", "EST. COST USD")
	row := func(tenantID, path, alias, deployment string, u ledger.Usage) {
		g.add(tenantID, path, alias, deployment,
			thousands(u.PromptTokens), thousands(u.CachedTokens), thousands(u.CompletionTokens), thousands(u.ReasoningTokens),
			thousands(u.TotalTokens()), thousands(u.Requests), thousands(u.Refusals), u.Cost.Dollars())
	}
	var grand ledger.Usage
	for i, r := range reports {
		for _, l := range r.Lines {
			row(r.Tenant, string(l.Path), l.Alias, l.Deployment, l.Usage)
		}
		total := "total"
		if b := tenants[i].MonthlyTokenBudget; b > 0 {
			total = fmt.Sprintf("total (%.0f%% of budget %s)", 100*float64(r.Total.TotalTokens())/float64(b), thousands(b))
		}
		if len(r.Lines) == 0 {
			total = "no usage"
		}
		row(r.Tenant, "", "", total, r.Total)
		grand.Add(r.Total)
	}
	if len(reports) > 1 {
		row("all tenants", "", "", "total", grand)
	}
	if err := g.write(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s (UTC), %d tenant(s); costs are estimates from the model catalog's prices\n", m, len(reports))
	return err
}

// thousands formats n with comma separators.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
