package batch

import (
	"context"
	"time"

	"github.com/offpath/offpath/internal/alert"
)

// Alert names: stable, for log-based alert rules and webhook receivers.
const (
	// AlertFailed: an Azure batch failed (validation, or refused for good).
	AlertFailed = "batch_failed"
	// AlertExpired: an Azure batch expired with part of its work undone.
	AlertExpired = "batch_expired"
	// AlertOverdue: a batch runs past its completion window plus a margin.
	AlertOverdue = "batch_overdue"
	// AlertOutputExpiring: a finished batch's output is not harvested and
	// Azure deletes it soon.
	AlertOutputExpiring = "output_expiring_unharvested"
	// AlertOutputLost: Azure no longer had a finished batch's output when
	// offpath came to copy it: its usage cannot be attributed.
	AlertOutputLost = "output_lost"
	// AlertHeldTooLong: a job has waited for quota longer than allowed.
	AlertHeldTooLong = "held_too_long"
	// AlertCountsMismatch: the lines read disagree with request_counts.
	AlertCountsMismatch = "counts_mismatch"
	// AlertHarvestFailing: a harvest keeps failing.
	AlertHarvestFailing = "harvest_failing"
	// AlertAzureAuth: Azure OpenAI refuses offpath's credential.
	AlertAzureAuth = "azure_auth"
	// AlertDeadlineFallback: a part cannot finish by its job's
	// complete_by; the rest of its items run synchronously.
	AlertDeadlineFallback = "deadline_fallback"
)

// Alerter raises alerts (package alert's Sender).
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// LogAlerter raises alerts as log events only.
type LogAlerter struct{}

// Raise logs a.
func (LogAlerter) Raise(ctx context.Context, a alert.Alert) { alert.Log(ctx, a) }

// raise sends an alert about job.
func (s *Service) raise(ctx context.Context, j *Job, name, msg string, fields map[string]any) {
	s.o.Alerts.Raise(ctx, alert.Alert{Name: name, Tenant: j.Tenant, Job: j.ID, Message: msg, Fields: fields, At: s.now()})
}

// due reports whether alert name may be raised again for j, and notes
// that it is (the caller persists j).
func (s *Service) due(j *Job, name string) bool {
	now := s.now()
	if last, ok := j.Alerts[name]; ok && now.Sub(last) < s.o.Realert {
		return false
	}
	if j.Alerts == nil {
		j.Alerts = map[string]time.Time{}
	}
	j.Alerts[name] = now
	return true
}

// authAlert raises azure_auth once per tick: the credential is the
// resource's, not a job's.
func (s *Service) authAlert(ctx context.Context, t *tick, err error) {
	t.auth.Do(func() {
		s.o.Alerts.Raise(ctx, alert.Alert{Name: AlertAzureAuth, Message: "Azure OpenAI refuses offpath's credential; batch jobs wait until it is fixed",
			Fields: map[string]any{"error": err.Error()}, At: s.now()})
	})
}
