package api

import (
	"net/http"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tenant"
)

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
	rep, err := s.o.Usage.Report(ctx, id, m)
	if err != nil {
		return ledger.Report{}, tenant.Tenant{}, err
	}
	return rep, t, nil
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
	writeJSON(w, http.StatusOK, rep.View(t.MonthlyTokenBudget))
}

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
	if err := ledger.WriteCSV(w, rep); err != nil {
		zerolog.Ctx(r.Context()).Warn().Err(err).Msg("usage export cut short")
	}
}
