// Package reconcile compares the ledger with Azure's own meter: per Azure
// OpenAI deployment and period (a UTC hour by default), the prompt and completion tokens the
// ledger holds against the Azure Monitor platform metrics of the resource
// (Processed Prompt Tokens and Generated Completion Tokens split by
// ModelDeploymentName). A difference beyond the tolerance raises
// "ledger_drift" naming the deployment, the period, both figures and the
// likely cause: Azure counted more than offpath metered (spend offpath did
// not meter, or traffic that did not go through offpath: a second door on
// the deployment), or less (usage booked in another period, or metrics that
// are not final).
//
// # Which period
//
// The period is an hour unless Options.Period says otherwise (one of
// Periods: a shorter one serves tests and demos, which cannot wait an
// hour). Azure's metrics arrive minutes late, so a period is compared only
// once it is final, Settle after it ended. A watermark (the first period
// not yet compared, kept in Table Storage and written only if no other run
// moved it) makes every period compared once: each Run compares every
// final period from the watermark on, those of the last MaxHours hours at
// most (a longer outage skips the oldest and says so in the log), then
// advances it. The first Run, with no watermark, compares the latest final
// period. Ledger rows are placed in the period they were last written: a
// queue delivery's rows are written as its calls return, so they fall in
// the period Azure counted them (a call that returns across a period's
// end shifts its tokens into the next one: the tolerance absorbs that). A
// Global Batch part's row is written at its harvest, hours after Azure ran
// its lines, so Global Batch deployments (the catalog says which) are
// compared per UTC day instead, on the Run that compares the day's last
// period, or not at all (BatchSkip) where the resource's metrics may not
// count them.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tenant"
)

// AlertDrift is raised for a deployment and period whose ledger tokens
// differ from Azure's count beyond the tolerance.
const AlertDrift = "ledger_drift"

// Defaults.
const (
	DefaultSettle    = 20 * time.Minute
	DefaultTolerance = 0.01 // 1 % of Azure's count
	DefaultMinTokens = 100  // differences up to this many tokens never alert
	DefaultMaxHours  = 48   // hours one Run catches up at most
)

// Periods are the comparison periods allowed: each divides an hour, and
// each is a time grain of Azure Monitor's metrics.
var Periods = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour}

// BatchMode says how Global Batch deployments are compared.
type BatchMode string

// The batch modes.
const (
	// BatchByDay compares them per UTC day, at the day's last period.
	BatchByDay BatchMode = "day"
	// BatchSkip never compares them: for a resource whose metrics leave
	// Global Batch out.
	BatchSkip BatchMode = "skip"
)

// ErrConflict is returned by a Watermark whose row another run wrote first.
var ErrConflict = errors.New("the watermark was moved by another run")

// Watermark keeps the first period not yet compared (package tablestore's
// Watermark).
type Watermark interface {
	// Load returns the period's start and a version; the zero time when there is none.
	Load(ctx context.Context) (next time.Time, version string, err error)
	// Save writes next if the version is still version (""; no watermark
	// yet), ErrConflict if not, and returns the new version.
	Save(ctx context.Context, next time.Time, version string) (string, error)
}

// Tokens are prompt and completion tokens.
type Tokens struct {
	Prompt, Completion int64
}

// Total is prompt plus completion tokens.
func (t Tokens) Total() int64 { return t.Prompt + t.Completion }

// Metrics is Azure Monitor's count for the resource (package monitor's
// Client).
type Metrics interface {
	// Tokens returns Azure's tokens per deployment in [from, to).
	Tokens(ctx context.Context, from, to time.Time) (map[string]Tokens, error)
}

// Ledger reads the ledger (package tablestore's Ledger).
type Ledger interface {
	Month(ctx context.Context, tenantID string, m ledger.Month) ([]ledger.Entry, error)
}

// Tenants lists every tenant whose rows are summed (package tablestore's
// Tenants).
type Tenants interface {
	List(ctx context.Context) ([]tenant.Tenant, error)
}

// Alerter raises alerts (package alert's Sender).
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Options are the Reconciler's dependencies and settings.
type Options struct {
	Metrics Metrics
	Ledger  Ledger
	Tenants Tenants
	Alerts  Alerter
	// Watermark, if set, makes Run catch up every period since the last
	// Run (see the package documentation); nil: Run compares the latest
	// final period only.
	Watermark Watermark
	// MaxHours bounds how far back one Run compares. Default
	// DefaultMaxHours.
	MaxHours int
	// Period is the span compared at once, one of Periods. Default an
	// hour.
	Period time.Duration
	// BatchDeployments are the Global Batch deployments, compared as
	// Batch says (see the package documentation).
	BatchDeployments []string
	// Batch is BatchByDay (the default) or BatchSkip.
	Batch BatchMode
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Settle is how long after a period ends its metrics are taken as
	// final. Default DefaultSettle.
	Settle time.Duration
	// Tolerance is the relative difference (of Azure's count, per prompt
	// and completion tokens) that does not alert; MinTokens an absolute
	// difference that never does. Defaults DefaultTolerance,
	// DefaultMinTokens.
	Tolerance float64
	MinTokens int64
}

// Reconciler runs the reconciliation. Its only state between runs is the
// Watermark.
type Reconciler struct {
	o Options
}

// New checks the dependencies and returns the Reconciler.
func New(o Options) (*Reconciler, error) {
	if o.Metrics == nil || o.Ledger == nil || o.Tenants == nil || o.Alerts == nil {
		return nil, errors.New("reconcile: metrics, ledger, tenants and alerts are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	if o.Tolerance <= 0 {
		o.Tolerance = DefaultTolerance
	}
	if o.MinTokens <= 0 {
		o.MinTokens = DefaultMinTokens
	}
	if o.MaxHours <= 0 {
		o.MaxHours = DefaultMaxHours
	}
	if o.Period == 0 {
		o.Period = time.Hour
	}
	if !slices.Contains(Periods, o.Period) {
		return nil, fmt.Errorf("reconcile: period %v: must be one of %v", o.Period, Periods)
	}
	switch o.Batch {
	case "":
		o.Batch = BatchByDay
	case BatchByDay, BatchSkip:
	default:
		return nil, fmt.Errorf("reconcile: batch mode %q: must be %q or %q", o.Batch, BatchByDay, BatchSkip)
	}
	return &Reconciler{o: o}, nil
}

// Period is one comparison: a deployment over [From, To).
type Period struct {
	Deployment string
	From, To   time.Time
	Ledger     Tokens
	Azure      Tokens
	Drift      bool
}

// Run compares every final period from the watermark on (without one, the
// period that ended Settle ago), each as Compare does, alerts on every
// drift and advances the watermark past the periods compared. It returns
// every comparison made; on an error, the periods compared before it stay
// compared and the next Run starts at the one that failed.
func (r *Reconciler) Run(ctx context.Context) ([]Period, error) {
	step := r.o.Period
	last := r.o.Now().UTC().Add(-r.o.Settle).Truncate(step).Add(-step)
	if r.o.Watermark == nil {
		return r.Compare(ctx, last)
	}
	next, version, err := r.o.Watermark.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconcile: %w", err)
	}
	if next.IsZero() {
		next = last
	}
	// A watermark written under a shorter period: the period that holds it
	// is compared whole (again, in part) rather than skipped.
	next = next.Truncate(step)
	if oldest := last.Add(step - time.Duration(r.o.MaxHours)*time.Hour); next.Before(oldest) {
		zerolog.Ctx(ctx).Warn().Str("event", "reconcile_hours_skipped").Time("from", next).Time("to", oldest).
			Int("max_hours", r.o.MaxHours).Msg("more final periods than one run compares: the oldest are not compared")
		next = oldest
	}
	var out []Period
	var failed error
	h := next
	for ; !h.After(last); h = h.Add(step) {
		if err := ctx.Err(); err != nil {
			failed = fmt.Errorf("reconcile: %w", err)
			break
		}
		ps, err := r.Compare(ctx, h)
		if err != nil {
			failed = fmt.Errorf("period %s: %w", h.Format(time.RFC3339), err)
			break
		}
		out = append(out, ps...)
	}
	if h.After(next) {
		if _, err := r.o.Watermark.Save(ctx, h, version); err != nil {
			return out, errors.Join(failed, fmt.Errorf("reconcile: advance the watermark to %s: %w", h.Format(time.RFC3339), err))
		}
	}
	return out, failed
}

// Compare compares the period that starts at start (and its day for
// Global Batch deployments compared by day, if it is the day's last
// period).
func (r *Reconciler) Compare(ctx context.Context, start time.Time) ([]Period, error) {
	start = start.UTC().Truncate(r.o.Period)
	end := start.Add(r.o.Period)
	day := time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC)
	byDay := r.o.Batch == BatchByDay && len(r.o.BatchDeployments) > 0
	lastOfDay := byDay && end.Equal(day.Add(24*time.Hour))
	from := start
	if lastOfDay {
		from = day
	}
	rows, err := r.rows(ctx, from, end)
	if err != nil {
		return nil, err
	}
	az, err := r.o.Metrics.Tokens(ctx, start, end)
	if err != nil {
		return nil, fmt.Errorf("reconcile: read Azure's metrics: %w", err)
	}
	var azDay map[string]Tokens
	if lastOfDay {
		if azDay, err = r.o.Metrics.Tokens(ctx, day, end); err != nil {
			return nil, fmt.Errorf("reconcile: read Azure's metrics of the day: %w", err)
		}
	}
	deps := map[string]bool{}
	for d := range az {
		deps[d] = true
	}
	for _, e := range rows {
		deps[e.Deployment] = true
	}
	names := make([]string, 0, len(deps))
	for d := range deps {
		names = append(names, d)
	}
	slices.Sort(names)
	var out []Period
	for _, d := range names {
		p := Period{Deployment: d, From: start, To: end, Azure: az[d]}
		if slices.Contains(r.o.BatchDeployments, d) {
			if !lastOfDay {
				continue
			}
			p.From, p.Azure = day, azDay[d]
		}
		for _, e := range rows {
			if e.Deployment == d && !e.Recorded.Before(p.From) && e.Recorded.Before(p.To) {
				p.Ledger.Prompt += e.PromptTokens
				p.Ledger.Completion += e.CompletionTokens
			}
		}
		p.Drift = r.drifts(p.Ledger.Prompt, p.Azure.Prompt) || r.drifts(p.Ledger.Completion, p.Azure.Completion)
		if p.Drift {
			r.alert(ctx, p)
		}
		out = append(out, p)
	}
	zerolog.Ctx(ctx).Info().Str("event", "ledger_reconciled").Time("from", start).Time("to", end).Int("deployments", len(out)).
		Int("drifts", countDrifts(out)).Msg("ledger compared with Azure Monitor")
	return out, nil
}

func (r *Reconciler) drifts(ledgerTokens, azure int64) bool {
	d := azure - ledgerTokens
	if d < 0 {
		d = -d
	}
	return d > r.o.MinTokens && float64(d) > r.o.Tolerance*float64(azure)
}

// rows are every tenant's ledger rows written in [from, to).
func (r *Reconciler) rows(ctx context.Context, from, to time.Time) ([]ledger.Entry, error) {
	tenants, err := r.o.Tenants.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconcile: list tenants: %w", err)
	}
	months := []ledger.Month{ledger.MonthOf(from)}
	if m := ledger.MonthOf(to.Add(-time.Nanosecond)); m != months[0] {
		months = append(months, m)
	}
	// A row's month is its unit's (a message's enqueued time, a job's
	// creation), which may be the month before the one it was written in.
	months = append(months, ledger.MonthOf(from.AddDate(0, -1, 0)))
	var out []ledger.Entry
	for _, t := range tenants {
		seen := map[ledger.Month]bool{}
		for _, m := range months {
			if seen[m] {
				continue
			}
			seen[m] = true
			es, err := r.o.Ledger.Month(ctx, t.ID, m)
			if err != nil {
				return nil, fmt.Errorf("reconcile: read the ledger of %s %s: %w", t.ID, m, err)
			}
			for _, e := range es {
				if !e.Recorded.Before(from) && e.Recorded.Before(to) {
					out = append(out, e)
				}
			}
		}
	}
	return out, nil
}

func (r *Reconciler) alert(ctx context.Context, p Period) {
	cause := "Azure counted more than offpath metered: spend offpath did not meter, or traffic that did not go through offpath (a second door on this deployment)"
	if p.Azure.Total() < p.Ledger.Total() {
		cause = "offpath metered more than Azure counted: usage booked in another period than Azure's, or Azure's metrics are not final"
	}
	r.o.Alerts.Raise(ctx, alert.Alert{Name: AlertDrift, At: r.o.Now().UTC(), Message: "the ledger differs from Azure Monitor's token metrics for deployment " + p.Deployment,
		Fields: map[string]any{"deployment": p.Deployment, "from": p.From.Format(time.RFC3339), "to": p.To.Format(time.RFC3339),
			"ledger_prompt_tokens": p.Ledger.Prompt, "ledger_completion_tokens": p.Ledger.Completion,
			"azure_prompt_tokens": p.Azure.Prompt, "azure_completion_tokens": p.Azure.Completion,
			"difference_tokens": p.Azure.Total() - p.Ledger.Total(), "likely_cause": cause}})
}

func countDrifts(ps []Period) int {
	n := 0
	for _, p := range ps {
		if p.Drift {
			n++
		}
	}
	return n
}
