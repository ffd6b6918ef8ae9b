package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/ncrontab"
)

// Nightly configures the platform's scheduled batch work: the nightly
// ticket summaries, the morning report and the second-door audit. It is
// set whenever Batch is. The timers' schedules are not the handler's: the
// host reads OFFPATH_TICKETS_SCHEDULE, OFFPATH_REPORT_DEADLINE_SCHEDULE and
// OFFPATH_AUDIT_SCHEDULE (NCRONTAB, UTC) from the functions' bindings; the
// handler reads the report deadline's too, for the day's job's deadline.
type Nightly struct {
	// Tenant is OFFPATH_TICKETS_TENANT (default "support"): the tenant the
	// summaries run and are billed for. Alias is OFFPATH_TICKETS_ALIAS
	// (default "summarize").
	Tenant string `json:"tenant"`
	Alias  string `json:"alias"`
	// SystemPrompt is OFFPATH_TICKETS_SYSTEM_PROMPT (default "Summarize
	// the ticket in two sentences."); MaxTokens OFFPATH_TICKETS_MAX_TOKENS
	// (default 160).
	SystemPrompt string `json:"system_prompt"`
	MaxTokens    int    `json:"max_tokens"`
	// TicketsContainer is OFFPATH_TICKETS_CONTAINER (default "tickets");
	// ReportsContainer OFFPATH_REPORTS_CONTAINER (default "reports").
	TicketsContainer string `json:"tickets_container"`
	ReportsContainer string `json:"reports_container"`
	// TicketURL is OFFPATH_TICKETS_URL: the support system's link to a
	// ticket, with "{id}" for its id; empty: the report does not link.
	TicketURL string `json:"ticket_url,omitempty"`
	// AuditMinAge is OFFPATH_AUDIT_MIN_AGE (default 1h): the audit never
	// deletes an Azure file younger than this.
	AuditMinAge *time.Duration `json:"audit_min_age"`
	// ReportDeadline is OFFPATH_REPORT_DEADLINE_SCHEDULE, the report
	// deadline timer's schedule (NCRONTAB): the day's job is submitted
	// with complete_by shortly before its next firing. Zero: no deadline.
	ReportDeadline ncrontab.Schedule `json:"-"`
}

// parseNightly reads the scheduled work's settings (only with a batch
// configuration).
func (c *Handler) parseNightly(getenv func(string) string) []error {
	if c.Batch == nil {
		return nil
	}
	n := &Nightly{Tenant: getenv("OFFPATH_TICKETS_TENANT"), Alias: getenv("OFFPATH_TICKETS_ALIAS"),
		SystemPrompt: getenv("OFFPATH_TICKETS_SYSTEM_PROMPT"), TicketsContainer: getenv("OFFPATH_TICKETS_CONTAINER"),
		ReportsContainer: getenv("OFFPATH_REPORTS_CONTAINER"), TicketURL: getenv("OFFPATH_TICKETS_URL")}
	var errs []error
	if s := getenv("OFFPATH_TICKETS_MAX_TOKENS"); s != "" {
		if v, err := strconv.Atoi(s); err != nil || v < 1 || v > 4096 {
			errs = append(errs, fmt.Errorf("OFFPATH_TICKETS_MAX_TOKENS %q: must be within 1..4096", s))
		} else {
			n.MaxTokens = v
		}
	}
	if s := getenv("OFFPATH_AUDIT_MIN_AGE"); s != "" {
		if v, err := time.ParseDuration(s); err != nil || v < 0 {
			errs = append(errs, fmt.Errorf("OFFPATH_AUDIT_MIN_AGE %q: must be a duration ≥ 0", s))
		} else {
			n.AuditMinAge = &v
		}
	}
	if v := getenv("OFFPATH_REPORT_DEADLINE_SCHEDULE"); v != "" {
		if sch, err := ncrontab.Parse(v); err != nil {
			errs = append(errs, fmt.Errorf("OFFPATH_REPORT_DEADLINE_SCHEDULE %q: %w", v, err))
		} else {
			n.ReportDeadline = sch
		}
	}
	for _, ct := range []struct{ name, v string }{{"OFFPATH_TICKETS_CONTAINER", n.TicketsContainer}, {"OFFPATH_REPORTS_CONTAINER", n.ReportsContainer}} {
		if ct.v != "" && !validContainer(ct.v) {
			errs = append(errs, fmt.Errorf("%s %q: not a blob container name (3–63 of a-z, 0-9, '-')", ct.name, ct.v))
		}
	}
	if u := n.TicketURL; u != "" {
		p, err := url.Parse(strings.ReplaceAll(u, "{id}", "x"))
		if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" || !strings.Contains(u, "{id}") {
			errs = append(errs, fmt.Errorf("OFFPATH_TICKETS_URL %q: must be an http(s) URL with {id} where the ticket id goes", u))
		}
	}
	c.Nightly = n
	return errs
}

// validContainer is Azure's rule for container names.
func validContainer(s string) bool {
	if len(s) < 3 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') })
}
