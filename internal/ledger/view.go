package ledger

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/offpath/offpath/internal/catalog"
)

// The report as offpath shows it, in the API's JSON and CSV and in the
// operator CLI, so that every door answers in the same columns.

// UsageView is a Usage in JSON.
type UsageView struct {
	PromptTokens     int64         `json:"prompt_tokens"`
	CompletionTokens int64         `json:"completion_tokens"`
	CachedTokens     int64         `json:"cached_tokens"`
	ReasoningTokens  int64         `json:"reasoning_tokens"`
	TotalTokens      int64         `json:"total_tokens"`
	Requests         int64         `json:"requests"`
	Refusals         int64         `json:"refusals"`
	Cost             catalog.Money `json:"estimated_cost_usd"`
}

// View returns u in JSON form.
func (u Usage) View() UsageView {
	return UsageView{u.PromptTokens, u.CompletionTokens, u.CachedTokens, u.ReasoningTokens, u.TotalTokens(), u.Requests, u.Refusals, u.Cost}
}

// LineView is a Line in JSON; Alias and Deployment are empty in subtotals.
type LineView struct {
	Path       Path   `json:"path"`
	Alias      string `json:"alias,omitempty"`
	Deployment string `json:"deployment,omitempty"`
	UsageView
	// CompletedTokens and AbandonedTokens split TotalTokens: the tokens of
	// finished work, and those of attempts that did not finish (crashed or
	// retried, or in progress), which were billed all the same.
	CompletedTokens int64 `json:"completed_tokens"`
	AbandonedTokens int64 `json:"abandoned_tokens"`
}

func (l Line) view(withNames bool) LineView {
	v := LineView{Path: l.Path, UsageView: l.Usage.View(), CompletedTokens: l.CompletedTokens(), AbandonedTokens: l.Abandoned.TotalTokens()}
	if withNames {
		v.Alias, v.Deployment = l.Alias, l.Deployment
	}
	return v
}

// BudgetView is a tenant's budget position in JSON.
type BudgetView struct {
	MonthlyTokens   int64 `json:"monthly_tokens"`
	UsedTokens      int64 `json:"used_tokens"`
	RemainingTokens int64 `json:"remaining_tokens"`
}

// ReportView is a Report in JSON.
type ReportView struct {
	Tenant string    `json:"tenant"`
	Month  Month     `json:"month"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	// Lines are by path, alias and deployment; Paths the subtotals by path.
	Lines []LineView `json:"lines"`
	Paths []LineView `json:"paths"`
	Total UsageView  `json:"total"`
	// CompletedTokens and AbandonedTokens split the total's tokens as the
	// lines' do.
	CompletedTokens int64 `json:"completed_tokens"`
	AbandonedTokens int64 `json:"abandoned_tokens"`
	// Budget is null when the tenant has none.
	Budget *BudgetView `json:"budget"`
	Rows   int         `json:"ledger_rows"`
}

// View returns the report in JSON form, with the tenant's monthly budget
// (zero: none).
func (r Report) View(monthlyBudget int64) ReportView {
	v := ReportView{
		Tenant: r.Tenant, Month: r.Month, From: r.Month.Start(), To: r.Month.End(),
		Lines: make([]LineView, 0, len(r.Lines)), Paths: make([]LineView, 0, len(r.Paths)),
		Total: r.Total.View(), Rows: r.Entries,
		CompletedTokens: r.Total.TotalTokens() - r.Abandoned.TotalTokens(), AbandonedTokens: r.Abandoned.TotalTokens(),
	}
	for _, l := range r.Lines {
		v.Lines = append(v.Lines, l.view(true))
	}
	for _, l := range r.Paths {
		v.Paths = append(v.Paths, l.view(false))
	}
	if monthlyBudget > 0 {
		used := r.Total.TotalTokens()
		v.Budget = &BudgetView{MonthlyTokens: monthlyBudget, UsedTokens: used, RemainingTokens: max(monthlyBudget-used, 0)}
	}
	return v
}

// WriteCSV writes reports as CSV: the header, then one row per line of each
// report (no total rows, so that a spreadsheet's sums stay right). Every
// cell is an id, a catalog name or a number, so none can start a formula.
func WriteCSV(w io.Writer, reports ...Report) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"tenant", "month", "path", "alias", "deployment", "prompt_tokens", "completion_tokens", "cached_tokens",
		"reasoning_tokens", "total_tokens", "requests", "refusals", "estimated_cost_usd", "completed_tokens", "abandoned_tokens"})
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, r := range reports {
		for _, l := range r.Lines {
			_ = cw.Write([]string{r.Tenant, r.Month.String(), string(l.Path), l.Alias, l.Deployment, n(l.PromptTokens), n(l.CompletionTokens),
				n(l.CachedTokens), n(l.ReasoningTokens), n(l.TotalTokens()), n(l.Requests), n(l.Refusals), l.Cost.Dollars(),
				n(l.CompletedTokens()), n(l.Abandoned.TotalTokens())})
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write usage CSV: %w", err)
	}
	return nil
}
