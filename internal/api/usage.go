package api

import (
	"encoding/csv"
	"net/http"
	"strconv"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tenant"
)

// usageView is a Usage as the API shows it.
type usageView struct {
	PromptTokens     int64         `json:"prompt_tokens"`
	CompletionTokens int64         `json:"completion_tokens"`
	CachedTokens     int64         `json:"cached_tokens"`
	ReasoningTokens  int64         `json:"reasoning_tokens"`
	TotalTokens      int64         `json:"total_tokens"`
	Requests         int64         `json:"requests"`
	Refusals         int64         `json:"refusals"`
	Cost             catalog.Money `json:"estimated_cost_usd"`
}

func viewUsage(u ledger.Usage) usageView {
	return usageView{u.PromptTokens, u.CompletionTokens, u.CachedTokens, u.ReasoningTokens, u.TotalTokens(), u.Requests, u.Refusals, u.Cost}
}

type lineView struct {
	Path       ledger.Path `json:"path"`
	Alias      string      `json:"alias,omitempty"`
	Deployment string      `json:"deployment,omitempty"`
	usageView
}

type budgetView struct {
	MonthlyTokens   int64 `json:"monthly_tokens"`
	UsedTokens      int64 `json:"used_tokens"`
	RemainingTokens int64 `json:"remaining_tokens"`
}

type reportView struct {
	Tenant string       `json:"tenant"`
	Month  ledger.Month `json:"month"`
	From   time.Time    `json:"from"`
	To     time.Time    `json:"to"`
	// Lines are by path, alias and deployment; Paths the subtotals by path.
	Lines  []lineView  `json:"lines"`
	Paths  []lineView  `json:"paths"`
	Total  usageView   `json:"total"`
	Budget *budgetView `json:"budget"`
	Rows   int         `json:"ledger_rows"`
}

// report reads the month's usage of the tenant the caller may see.
func (s *Server) report(r *http.Request, p auth.Principal) (ledger.Report, tenant.Tenant, error) {
	q, err := query(r, "month", "tenant")
	if err != nil {
		return ledger.Report{}, tenant.Tenant{}, err
	}
	m := ledger.MonthOf(s.o.Now())
	if v, ok := q["month"]; ok {
		if m, err = ledger.ParseMonth(v); err != nil {
			return ledger.Report{}, tenant.Tenant{}, newError(http.StatusBadRequest, "invalid_month", err.Error())
		}
	}
	id, err := scope(p, q["tenant"])
	if err != nil {
		return ledger.Report{}, tenant.Tenant{}, err
	}
	ctx := r.Context()
	t, err := s.o.Tenants.Get(ctx, id)
	if err != nil {
		return ledger.Report{}, tenant.Tenant{}, err
	}
	entries, err := s.o.Usage.Month(ctx, id, m)
	if err != nil {
		return ledger.Report{}, tenant.Tenant{}, err
	}
	return ledger.Summarize(id, m, entries), t, nil
}

// scope returns whose usage the caller reads: a tenant only ever its own
// (asking for another is 403, whether or not that one exists); the admin
// names the tenant.
func scope(p auth.Principal, asked string) (string, error) {
	if !p.Admin {
		if asked != "" && asked != p.TenantID {
			return "", newError(http.StatusForbidden, "forbidden", "a tenant can read only its own usage")
		}
		return p.TenantID, nil
	}
	if asked == "" {
		return "", newError(http.StatusBadRequest, "tenant_required", "the admin credential reads one tenant's usage at a time: add ?tenant=<id>")
	}
	if err := tenant.ValidateID(asked); err != nil {
		return "", newError(http.StatusBadRequest, "invalid_tenant_id", err.Error())
	}
	return asked, nil
}

func (s *Server) usageJSON(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	rep, t, err := s.report(r, p)
	if err != nil {
		fail(w, r, err)
		return
	}
	v := reportView{
		Tenant: rep.Tenant, Month: rep.Month, From: rep.Month.Start(), To: rep.Month.End(),
		Lines: make([]lineView, 0, len(rep.Lines)), Paths: make([]lineView, 0, len(rep.Paths)),
		Total: viewUsage(rep.Total), Rows: rep.Entries,
	}
	for _, l := range rep.Lines {
		v.Lines = append(v.Lines, lineView{l.Path, l.Alias, l.Deployment, viewUsage(l.Usage)})
	}
	for _, l := range rep.Paths {
		v.Paths = append(v.Paths, lineView{Path: l.Path, usageView: viewUsage(l.Usage)})
	}
	if t.MonthlyTokenBudget > 0 {
		used := rep.Total.TotalTokens()
		v.Budget = &budgetView{MonthlyTokens: t.MonthlyTokenBudget, UsedTokens: used, RemainingTokens: max(t.MonthlyTokenBudget-used, 0)}
	}
	writeJSON(w, http.StatusOK, v)
}

// CSVHeader is the usage export's header row.
var CSVHeader = []string{"tenant", "month", "path", "alias", "deployment", "prompt_tokens", "completion_tokens", "cached_tokens",
	"reasoning_tokens", "total_tokens", "requests", "refusals", "estimated_cost_usd"}

func (s *Server) usageCSV(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	rep, _, err := s.report(r, p)
	if err != nil {
		fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="usage-`+rep.Tenant+"-"+rep.Month.String()+`.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	cw := csv.NewWriter(w)
	_ = cw.Write(CSVHeader)
	for _, l := range rep.Lines {
		_ = cw.Write(CSVRow(rep.Tenant, rep.Month, l))
	}
	cw.Flush()
}

// CSVRow is one line of the usage export. Every field is an id, a name
// from the catalog or a number, so no cell can start a spreadsheet formula.
func CSVRow(tenantID string, m ledger.Month, l ledger.Line) []string {
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{tenantID, m.String(), string(l.Path), l.Alias, l.Deployment, n(l.PromptTokens), n(l.CompletionTokens),
		n(l.CachedTokens), n(l.ReasoningTokens), n(l.TotalTokens()), n(l.Requests), n(l.Refusals), l.Cost.Dollars()}
}
