package nightly

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/report"
)

// WriteReports writes the report of every recorded day whose job has been
// harvested and whose report is not written yet. It returns how many it
// wrote; one day's failure is logged and does not stop the others.
func (s *Service) WriteReports(ctx context.Context) (int, error) {
	nights, err := s.o.Nights.Unreported(ctx, s.o.Tenant)
	if err != nil {
		return 0, fmt.Errorf("list unreported nights: %w", err)
	}
	written := 0
	var errs []error
	for _, n := range nights {
		var job *batch.Job
		if n.JobID != "" {
			j, err := s.o.Batches.Get(ctx, n.Tenant, n.JobID)
			if err != nil {
				errs = append(errs, fmt.Errorf("day %s: %w", n.Day, err))
				continue
			}
			if j.State != batch.Harvested {
				continue
			}
			job = &j
		}
		if _, err := s.writeReport(ctx, n, job); err != nil {
			zerolog.Ctx(ctx).Error().Err(err).Str("day", n.Day).Str("job", n.JobID).Msg("morning report not written")
			errs = append(errs, err)
			continue
		}
		written++
	}
	if len(errs) == len(nights) && len(errs) > 0 {
		return written, errors.Join(errs...)
	}
	return written, nil
}

// ReportBlobs returns the names of a day's report in the reports container.
func ReportBlobs(day string) (html, markdown string) { return day + ".html", day + ".md" }

// writeReport builds the day's report (job is nil for a day without one),
// writes both forms and marks the day reported.
func (s *Service) writeReport(ctx context.Context, n Night, job *batch.Job) (Night, error) {
	rep, err := s.build(ctx, n, job)
	if err != nil {
		return n, fmt.Errorf("morning report of %s: %w", n.Day, err)
	}
	htmlName, mdName := ReportBlobs(n.Day)
	if err := s.put(ctx, htmlName, "text/html; charset=utf-8", func(w io.Writer) error { return s.o.Renderer.HTML(w, rep) }); err != nil {
		return n, err
	}
	if err := s.put(ctx, mdName, "text/markdown; charset=utf-8", func(w io.Writer) error { return s.o.Renderer.Markdown(w, rep) }); err != nil {
		return n, err
	}
	at := s.now()
	n, err = s.update(ctx, n, func(n *Night) { n.ReportedAt, n.ReportHTML, n.ReportMD = at, htmlName, mdName })
	if err != nil {
		return n, err
	}
	c := counts(rep)
	zerolog.Ctx(ctx).Info().Str("event", EventReportWritten).Str("day", n.Day).Str("job", n.JobID).
		Str("container", s.o.Reports).Str("html", htmlName).Int("tickets", len(rep.Items)).Int("summarised", c[report.OK]).
		Int("refused", c[report.Refused]).Int("not_summarised", len(rep.Items)-c[report.OK]-c[report.Refused]).
		Int("skipped", max(rep.SkippedTotal, len(rep.Skipped))).Int64("tokens", rep.Usage.TotalTokens()).
		Str("cost", rep.Usage.Cost.Dollars()).Msg(alert.EventMessage(EventReportWritten, "morning report written"))
	return n, nil
}

func counts(rep *report.Report) map[report.Outcome]int {
	c := map[report.Outcome]int{}
	for _, it := range rep.Items {
		c[it.Outcome]++
	}
	return c
}

// put writes one report blob.
func (s *Service) put(ctx context.Context, name, contentType string, render func(io.Writer) error) error {
	w, err := s.o.Blobs.Create(ctx, s.o.Reports, name, nil)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	if err := render(bw); err != nil {
		w.Abort(err)
		return fmt.Errorf("render %s: %w", name, err)
	}
	if err := bw.Flush(); err != nil {
		w.Abort(err)
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return s.o.Blobs.SetContentType(ctx, s.o.Reports, name, contentType)
}

// build joins the run's index, the job's results, the manifest and the
// ledger into the report.
func (s *Service) build(ctx context.Context, n Night, job *batch.Job) (*report.Report, error) {
	day, err := time.Parse(time.DateOnly, n.Day)
	if err != nil {
		return nil, fmt.Errorf("day %q: %w", n.Day, err)
	}
	rep := &report.Report{Day: day, Tenant: n.Tenant, JobID: n.JobID, Generated: s.now()}
	m, err := s.readManifest(ctx, n)
	if err != nil {
		return nil, err
	}
	rep.SkippedTotal = m.Collected.SkippedTotal
	rep.Unchanged = m.Collected.Unchanged
	for _, sk := range m.Skipped {
		rep.Skipped = append(rep.Skipped, report.Skipped{Blob: sk.Blob, Line: sk.Line, TicketID: sk.ID, Reason: sk.Reason})
	}
	if job == nil {
		return rep, nil
	}
	at := map[string]int{}
	if err := s.eachIndexed(ctx, n, func(e indexEntry) error {
		at[e.ID] = len(rep.Items)
		rep.Items = append(rep.Items, report.Item{TicketID: e.ID, Subject: e.Subject, Customer: e.Customer,
			Outcome: report.Failed, Reason: "no result for this ticket in the job's output"})
		return nil
	}); err != nil {
		return nil, err
	}
	if err := s.joinResults(ctx, job, rep, at); err != nil {
		return nil, err
	}
	if rep.Usage, err = s.usage(ctx, job, &rep.Fallback); err != nil {
		return nil, err
	}
	return rep, nil
}

// joinResults sets each item's outcome from the job's results file.
func (s *Service) joinResults(ctx context.Context, job *batch.Job, rep *report.Report, at map[string]int) error {
	body, _, _, err := s.o.Batches.Results(ctx, job.Tenant, job.ID)
	if err != nil {
		return fmt.Errorf("open the results of job %s: %w", job.ID, err)
	}
	defer body.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(body, 256<<10))
	for {
		var l batch.ResultLine
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the results of job %s: %w", job.ID, err)
		}
		i, ok := at[l.ItemID]
		if !ok {
			continue // not a ticket of this run: cannot happen with positional ids
		}
		it := &rep.Items[i]
		it.Outcome, it.Summary, it.Reason = outcomeOf(&l)
		if l.Source == batch.SourceSync {
			rep.Fallback.Items++
		}
	}
}

// outcomeOf maps a result line to the report's outcome, summary and reason.
func outcomeOf(l *batch.ResultLine) (report.Outcome, string, string) {
	errText := func(fallback string) string {
		if l.Error == nil {
			return fallback
		}
		if l.Error.Message != "" {
			return l.Error.Code + ": " + l.Error.Message
		}
		return l.Error.Code
	}
	switch l.Outcome {
	case batch.OK:
		return report.OK, l.Answer, ""
	case batch.Refused:
		why := "declined by the content filter"
		if l.RefusedBy != "" {
			why += " (" + l.RefusedBy + ")"
		}
		if len(l.Categories) > 0 {
			why += ": " + strings.Join(l.Categories, ", ")
		}
		return report.Refused, "", why
	case batch.ExpiredOutcome:
		return report.Expired, "", errText("the batch expired before this ticket was run")
	case batch.CancelledOutcome:
		return report.Cancelled, "", errText("the job was cancelled before this ticket was run")
	}
	return report.Failed, "", errText("failed")
}

// usage sums the ledger rows of the job's parts and of the items its
// deadline fallback answered: the report's cost and tokens are the
// ledger's, not a recomputation. The fallback's extra cost is its rows'
// cost less what their tokens would have cost at the part's batch price.
func (s *Service) usage(ctx context.Context, job *batch.Job, fb *report.Fallback) (ledger.Usage, error) {
	var u ledger.Usage
	entries, err := s.o.Ledger.Month(ctx, job.Tenant, job.Month())
	if err != nil {
		return u, fmt.Errorf("read the ledger: %w", err)
	}
	units := map[string]string{} // unit → the part's batch deployment
	for i := range job.Parts {
		units[batch.LedgerUnit(job.ID, job.Parts[i].Index)] = job.Parts[i].Deployment
	}
	for _, e := range entries {
		unit, fallback := e.Unit, false
		if i := strings.LastIndex(unit, "/sync-"); i > 0 {
			unit, fallback = unit[:i], true
		}
		dep, ok := units[unit]
		if !ok {
			continue
		}
		u.Add(e.Usage)
		if !fallback {
			continue
		}
		fb.Cost += e.Cost
		if s.o.Catalog != nil {
			if p, err := s.o.Catalog.Price(job.Alias, catalog.Batch, dep); err == nil {
				fb.Extra += e.Cost - p.Cost(e.PromptTokens, e.CachedTokens, e.CompletionTokens)
			}
		}
	}
	return u, nil
}

// ReportDays returns the days ("yyyy-mm-dd") that have a morning report,
// oldest first.
func (s *Service) ReportDays(ctx context.Context) ([]string, error) {
	names, err := s.o.Blobs.List(ctx, s.o.Reports, "")
	if err != nil {
		return nil, fmt.Errorf("list morning reports: %w", err)
	}
	days := []string{}
	for _, n := range names {
		day, ok := strings.CutSuffix(n, ".html")
		if _, err := time.Parse(time.DateOnly, day); ok && err == nil {
			days = append(days, day)
		}
	}
	slices.Sort(days)
	return days, nil
}

// OpenReport streams a day's morning report, HTML or Markdown; a day
// without one is object.ErrNotFound.
func (s *Service) OpenReport(ctx context.Context, day string, markdown bool) (io.ReadCloser, error) {
	if _, err := time.Parse(time.DateOnly, day); err != nil {
		return nil, fmt.Errorf("report of %q: %w", day, object.ErrNotFound)
	}
	html, md := ReportBlobs(day)
	name := html
	if markdown {
		name = md
	}
	r, _, err := s.o.Blobs.Open(ctx, s.o.Reports, name)
	if err != nil {
		return nil, fmt.Errorf("report of %s: %w", day, err)
	}
	return r, nil
}
