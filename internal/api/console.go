package api

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/audit"
	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/object"
)

// The read routes the console page needs beside the rest of the API: who
// is signed in, spend per day, and the operator's views (alerts raised,
// jobs held for quota, the second door's findings, the morning reports).

// AlertRecord reads the record of raised alerts (package tablestore's
// Alerts).
type AlertRecord interface {
	List(ctx context.Context, cursor string, limit int) ([]alert.Recorded, string, error)
}

// HeldJobs lists every tenant's jobs held for admission (package batch's
// Service).
type HeldJobs interface {
	Held(ctx context.Context) ([]batch.Job, error)
}

// Findings reads the second-door audit's records (package tablestore's
// Audit).
type Findings interface {
	Load(ctx context.Context, kind audit.Kind) (map[string]audit.Record, error)
}

// Reports reads the morning reports (package nightly's Service).
type Reports interface {
	ReportDays(ctx context.Context) ([]string, error)
	OpenReport(ctx context.Context, day string, markdown bool) (io.ReadCloser, error)
}

// unavailable answers 503 for an operator view whose store is missing.
func unavailable(w http.ResponseWriter, what string) {
	writeError(w, http.StatusServiceUnavailable, "unavailable", what+" are not configured on this deployment")
}

type whoamiView struct {
	Admin       bool        `json:"admin"`
	Auth        auth.Method `json:"auth"`
	Tenant      string      `json:"tenant,omitempty"`
	DisplayName string      `json:"display_name,omitempty"`
	Aliases     []string    `json:"aliases,omitempty"`
}

// whoami says who the credential is: the console signs in with it.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if _, err := query(r); err != nil {
		fail(w, r, err)
		return
	}
	v := whoamiView{Admin: p.Admin, Auth: p.Method}
	if !p.Admin {
		t, err := s.o.Tenants.Get(r.Context(), p.TenantID)
		if err != nil {
			fail(w, r, err)
			return
		}
		v.Tenant, v.DisplayName, v.Aliases = t.ID, t.DisplayName, t.Aliases
		if v.Aliases == nil {
			v.Aliases = []string{}
		}
	}
	writeJSON(w, http.StatusOK, v)
}

type dayView struct {
	Day   string            `json:"day"`
	Lines []ledger.LineView `json:"lines"`
	Total ledger.UsageView  `json:"total"`
}

type dailyView struct {
	Tenant string           `json:"tenant"`
	Month  ledger.Month     `json:"month"`
	Days   []dayView        `json:"days"`
	Total  ledger.UsageView `json:"total"`
}

// usageDaily is the month's usage split by the UTC day each ledger row was
// last written, each day by path, alias and deployment; the days sum to
// the month's report exactly.
func (s *Server) usageDaily(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	q, err := query(r, "month", "tenant")
	if err != nil {
		fail(w, r, err)
		return
	}
	m := ledger.MonthOf(s.o.Now())
	if v, ok := q["month"]; ok {
		if m, err = ledger.ParseMonth(v); err != nil {
			fail(w, r, newError(http.StatusBadRequest, "invalid_month", err.Error()))
			return
		}
	}
	id, err := scope(p, q["tenant"])
	if err != nil {
		fail(w, r, err)
		return
	}
	ctx := r.Context()
	if _, err := s.o.Tenants.Get(ctx, id); err != nil {
		fail(w, r, err)
		return
	}
	rollups, err := s.o.Usage.Rollups(ctx, id, m)
	if err != nil {
		fail(w, r, err)
		return
	}
	byDay := map[string][]ledger.Rollup{}
	for _, u := range rollups {
		byDay[u.Day] = append(byDay[u.Day], u)
	}
	v := dailyView{Tenant: id, Month: m, Days: []dayView{}, Total: ledger.SummarizeRollups(id, m, rollups).Total.View()}
	for day, us := range byDay {
		rv := ledger.SummarizeRollups(id, m, us).View(0)
		if len(rv.Lines) == 0 {
			continue
		}
		v.Days = append(v.Days, dayView{Day: day, Lines: rv.Lines, Total: rv.Total})
	}
	slices.SortFunc(v.Days, func(a, b dayView) int { return cmp.Compare(a.Day, b.Day) })
	writeJSON(w, http.StatusOK, v)
}

// Limits of the alerts list.
const (
	defaultAlertsLimit = 100
	maxAlertsLimit     = 500
)

type alertsView struct {
	Alerts []alert.Recorded `json:"alerts"`
	Next   string           `json:"next,omitempty"`
}

// alerts lists the alerts raised, newest first, a page at a time.
func (s *Server) alerts(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
	if s.o.Alerts == nil {
		unavailable(w, "alert records")
		return
	}
	q, err := query(r, "cursor", "limit")
	if err != nil {
		fail(w, r, err)
		return
	}
	limit, err := intParam(q, "limit", defaultAlertsLimit, maxAlertsLimit)
	if err != nil {
		fail(w, r, err)
		return
	}
	cursor := q["cursor"]
	if cursor != "" && !alert.ValidID(cursor) {
		fail(w, r, newError(http.StatusBadRequest, "invalid_cursor", "cursor: not a cursor this API returned"))
		return
	}
	list, next, err := s.o.Alerts.List(r.Context(), cursor, limit)
	if err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, alertsView{Alerts: list, Next: next})
}

// intParam reads an optional positive integer parameter of at most max.
func intParam(q map[string]string, name string, def, max int) (int, error) {
	v, ok := q[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, newError(http.StatusBadRequest, "invalid_"+name, name+": an integer from 1 to "+strconv.Itoa(max))
	}
	return n, nil
}

type heldPartView struct {
	Index           int        `json:"index"`
	Deployment      string     `json:"deployment"`
	HeldReason      string     `json:"held_reason"`
	HeldSince       *time.Time `json:"held_since,omitempty"`
	Attempt         int        `json:"attempt"`
	NextAttemptAt   *time.Time `json:"next_attempt_at,omitempty"`
	EstimatedTokens int64      `json:"estimated_tokens"`
}

type heldJobView struct {
	Tenant          string         `json:"tenant"`
	ID              string         `json:"id"`
	State           batch.State    `json:"state"`
	Alias           string         `json:"alias"`
	Items           int            `json:"items"`
	EstimatedTokens int64          `json:"estimated_tokens"`
	Created         time.Time      `json:"created"`
	Parts           []heldPartView `json:"held_parts"`
}

// heldJobs lists every tenant's jobs waiting for admission, with why.
func (s *Server) heldJobs(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
	if s.o.Held == nil {
		unavailable(w, "batch jobs")
		return
	}
	if _, err := query(r); err != nil {
		fail(w, r, err)
		return
	}
	jobs, err := s.o.Held.Held(r.Context())
	if err != nil {
		fail(w, r, err)
		return
	}
	out := struct {
		Jobs []heldJobView `json:"jobs"`
	}{Jobs: []heldJobView{}}
	for _, j := range jobs {
		v := heldJobView{Tenant: j.Tenant, ID: j.ID, State: j.State, Alias: j.Alias, Items: j.Items,
			EstimatedTokens: j.EstimatedTokens, Created: j.Created, Parts: []heldPartView{}}
		for _, p := range j.Parts {
			if p.Status == batch.PartPending && p.HeldReason != "" {
				v.Parts = append(v.Parts, heldPartView{Index: p.Index, Deployment: p.Deployment, HeldReason: p.HeldReason,
					HeldSince: timePtr(p.HeldSince), Attempt: p.Attempt, NextAttemptAt: timePtr(p.NextAttemptAt), EstimatedTokens: p.EstimatedTokens})
			}
		}
		out.Jobs = append(out.Jobs, v)
	}
	writeJSON(w, http.StatusOK, out)
}

type findingView struct {
	Kind         audit.Kind       `json:"kind"`
	ID           string           `json:"id"`
	AlertedAt    time.Time        `json:"alerted_at"`
	CreatedAt    *time.Time       `json:"created_at,omitempty"`
	Status       string           `json:"status,omitempty"`
	InputFileID  string           `json:"input_file_id,omitempty"`
	OutputFileID string           `json:"output_file_id,omitempty"`
	ErrorFileID  string           `json:"error_file_id,omitempty"`
	BookedAt     *time.Time       `json:"booked_at,omitempty"`
	Tenant       string           `json:"tenant,omitempty"`
	Job          string           `json:"job,omitempty"`
	Alias        string           `json:"alias,omitempty"`
	Deployment   string           `json:"deployment,omitempty"`
	Usage        ledger.UsageView `json:"usage"`
	Note         string           `json:"note,omitempty"`
	Filename     string           `json:"filename,omitempty"`
	Purpose      string           `json:"purpose,omitempty"`
	Bytes        int64            `json:"bytes,omitempty"`
}

// findings lists what the second-door audit found: batches and files on
// the resource that offpath did not create, and orphaned batches, newest
// alert first.
func (s *Server) findings(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
	if s.o.Findings == nil {
		unavailable(w, "audit records")
		return
	}
	if _, err := query(r); err != nil {
		fail(w, r, err)
		return
	}
	out := struct {
		Findings []findingView `json:"findings"`
	}{Findings: []findingView{}}
	for _, kind := range []audit.Kind{audit.KindBatch, audit.KindFile} {
		recs, err := s.o.Findings.Load(r.Context(), kind)
		if err != nil {
			fail(w, r, err)
			return
		}
		for _, rec := range recs {
			out.Findings = append(out.Findings, findingView{Kind: rec.Kind, ID: rec.ID, AlertedAt: rec.AlertedAt,
				CreatedAt: timePtr(rec.CreatedAt), Status: rec.Status, InputFileID: rec.InputFileID, OutputFileID: rec.OutputFileID,
				ErrorFileID: rec.ErrorFileID, BookedAt: timePtr(rec.BookedAt), Tenant: rec.Tenant, Job: rec.Job, Alias: rec.Alias,
				Deployment: rec.Deployment, Usage: rec.Usage.View(), Note: rec.Note, Filename: rec.Filename, Purpose: rec.Purpose, Bytes: rec.Bytes})
		}
	}
	slices.SortFunc(out.Findings, func(a, b findingView) int {
		return cmp.Or(b.AlertedAt.Compare(a.AlertedAt), cmp.Compare(a.ID, b.ID))
	})
	writeJSON(w, http.StatusOK, out)
}

// morningReports is the index of the morning reports, newest first.
func (s *Server) morningReports(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
	if s.o.Reports == nil {
		unavailable(w, "morning reports")
		return
	}
	if _, err := query(r); err != nil {
		fail(w, r, err)
		return
	}
	days, err := s.o.Reports.ReportDays(r.Context())
	if err != nil {
		fail(w, r, err)
		return
	}
	slices.Reverse(days)
	writeJSON(w, http.StatusOK, map[string][]string{"days": days})
}

// reportMaxBytes bounds a report read into a JSON answer.
const reportMaxBytes = 8 << 20

// morningReport answers a day's morning report: its Markdown with the previous
// and next days that have one (JSON), or ?format=html the self-contained
// HTML page, as a download that runs nothing in the API's origin.
func (s *Server) morningReport(w http.ResponseWriter, r *http.Request, _ auth.Principal) {
	if s.o.Reports == nil {
		unavailable(w, "morning reports")
		return
	}
	q, err := query(r, "format")
	if err != nil {
		fail(w, r, err)
		return
	}
	format := cmp.Or(q["format"], "json")
	if format != "json" && format != "html" {
		fail(w, r, newError(http.StatusBadRequest, "invalid_format", "format: json or html"))
		return
	}
	day := r.PathValue("day")
	if d, err := time.Parse(time.DateOnly, day); err != nil || d.Format(time.DateOnly) != day {
		fail(w, r, newError(http.StatusBadRequest, "invalid_day", "the day is yyyy-mm-dd"))
		return
	}
	ctx := r.Context()
	body, err := s.o.Reports.OpenReport(ctx, day, format == "json")
	if errors.Is(err, object.ErrNotFound) {
		fail(w, r, newError(http.StatusNotFound, "not_found", "no morning report for "+day))
		return
	}
	if err != nil {
		fail(w, r, err)
		return
	}
	defer body.Close()
	if format == "html" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="morning-report-`+day+`.html"`)
		w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if _, err := io.Copy(w, body); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("morning report cut short")
		}
		return
	}
	md, err := io.ReadAll(io.LimitReader(body, reportMaxBytes+1))
	if err != nil {
		fail(w, r, err)
		return
	}
	if len(md) > reportMaxBytes {
		fail(w, r, newError(http.StatusRequestEntityTooLarge, "report_too_large", "the report is too large to show; download it with ?format=html"))
		return
	}
	days, err := s.o.Reports.ReportDays(ctx)
	if err != nil {
		fail(w, r, err)
		return
	}
	v := struct {
		Day      string `json:"day"`
		Prev     string `json:"prev,omitempty"`
		Next     string `json:"next,omitempty"`
		Markdown string `json:"markdown"`
		HTML     string `json:"html"`
	}{Day: day, Markdown: string(md), HTML: "/api/v1/reports/" + day + "?format=html"}
	if i, found := slices.BinarySearch(days, day); found || i <= len(days) {
		if i > 0 {
			v.Prev = days[i-1]
		}
		if found {
			i++
		}
		if i < len(days) {
			v.Next = days[i]
		}
	}
	writeJSON(w, http.StatusOK, v)
}
