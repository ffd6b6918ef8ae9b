package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/offpath/offpath/internal/tenant"
)

// ErrBudgetExceeded matches every *BudgetError.
var ErrBudgetExceeded = errors.New("monthly token budget exceeded")

// BudgetError says by how much a tenant's monthly budget would be exceeded.
type BudgetError struct {
	Tenant    string
	Month     Month
	Budget    int64
	Used      int64
	Requested int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("tenant %s would exceed its %s token budget: %d used + %d requested > %d",
		e.Tenant, e.Month, e.Used, e.Requested, e.Budget)
}

// Is makes errors.Is(err, ErrBudgetExceeded) true.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExceeded }

// Totaler sums a tenant's usage in a month (package tablestore: one
// partition query that reads only the counters).
type Totaler interface {
	Totals(ctx context.Context, tenantID string, m Month) (Usage, error)
}

// Budgets answers how much of its monthly budget a tenant has used, and
// whether more work fits.
type Budgets struct {
	usage Totaler
}

// NewBudgets returns Budgets over usage.
func NewBudgets(usage Totaler) *Budgets { return &Budgets{usage: usage} }

// BudgetStatus is a tenant's budget position in a month. Budget zero means
// the tenant has no budget; Remaining is then zero too.
type BudgetStatus struct {
	Budget    int64
	Used      int64
	Remaining int64
}

// Status returns t's budget position in month m.
func (b *Budgets) Status(ctx context.Context, t tenant.Tenant, m Month) (BudgetStatus, error) {
	u, err := b.usage.Totals(ctx, t.ID, m)
	if err != nil {
		return BudgetStatus{}, fmt.Errorf("budget of %s in %s: %w", t.ID, m, err)
	}
	s := BudgetStatus{Budget: t.MonthlyTokenBudget, Used: u.TotalTokens()}
	if s.Budget > 0 {
		s.Remaining = max(s.Budget-s.Used, 0)
	}
	return s, nil
}

// Check returns a *BudgetError if additional more tokens in month m would
// take t past its monthly budget, nil if they fit or t has no budget, and
// a storage error (transient) if usage cannot be read. The batch path calls
// it with a job's estimated tokens before submitting.
func (b *Budgets) Check(ctx context.Context, t tenant.Tenant, m Month, additional int64) error {
	if t.MonthlyTokenBudget <= 0 {
		return nil
	}
	s, err := b.Status(ctx, t, m)
	if err != nil {
		return err
	}
	if s.Used+max(additional, 0) > s.Budget {
		return &BudgetError{Tenant: t.ID, Month: m, Budget: s.Budget, Used: s.Used, Requested: additional}
	}
	return nil
}
