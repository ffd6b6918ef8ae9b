package nightly

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/batch"
)

// CheckDeadline is run at the report deadline: if day's report is not
// written, it raises AlertReportMissing naming the job and where it is
// stuck. It returns whether the report is missing.
func (s *Service) CheckDeadline(ctx context.Context, day time.Time) (missing bool, err error) {
	name := dayName(day)
	a := alert.Alert{Name: AlertReportMissing, Tenant: s.o.Tenant, At: s.now(), Fields: map[string]any{"day": name}}
	n, err := s.o.Nights.Get(ctx, s.o.Tenant, name)
	switch {
	case errors.Is(err, ErrNotFound):
		a.Message = fmt.Sprintf("the morning report of %s is missing at the deadline: the nightly run recorded nothing for the day", name)
		if j, err := s.o.Batches.JobByKey(ctx, s.o.Tenant, IdempotencyKey(name)); err == nil {
			a.Job = j.ID
			a.Message = fmt.Sprintf("the morning report of %s is missing at the deadline: job %s is %s (the day's record is missing)", name, j.ID, stuck(&j))
			a.Fields["state"] = string(j.State)
		} else if !errors.Is(err, batch.ErrNotFound) {
			return true, err
		} else {
			a.Fields["state"] = "not_submitted"
		}
		s.o.Alerts.Raise(ctx, a)
		return true, nil
	case err != nil:
		return false, err
	case n.Reported():
		zerolog.Ctx(ctx).Info().Str("day", name).Str("job", n.JobID).Msg("morning report written before the deadline")
		return false, nil
	}
	a.Job = n.JobID
	if n.JobID == "" {
		a.Message = fmt.Sprintf("the morning report of %s is missing at the deadline: the day had no new tickets, but its report was not written", name)
		a.Fields["state"] = "no_job"
	} else {
		j, err := s.o.Batches.Get(ctx, n.Tenant, n.JobID)
		if err != nil {
			return true, fmt.Errorf("read job %s: %w", n.JobID, err)
		}
		a.Message = fmt.Sprintf("the morning report of %s is missing at the deadline: job %s is %s", name, j.ID, stuck(&j))
		a.Fields["state"] = string(j.State)
		done, total := lines(&j)
		a.Fields["lines_done"], a.Fields["lines_total"] = done, total
	}
	s.o.Alerts.Raise(ctx, a)
	return true, nil
}

// stuck says in words where a job is.
func stuck(j *batch.Job) string {
	switch j.State {
	case batch.Accepted:
		return "accepted and not yet admitted"
	case batch.Held:
		var why []string
		for i := range j.Parts {
			if r := j.Parts[i].HeldReason; r != "" && !slices.Contains(why, r) {
				why = append(why, r)
			}
		}
		return "held (" + strings.Join(why, ", ") + ")"
	case batch.Submitted:
		done, total := lines(j)
		var st []string
		for i := range j.Parts {
			if a := string(j.Parts[i].AzureStatus); a != "" && !slices.Contains(st, a) {
				st = append(st, a)
			}
		}
		return fmt.Sprintf("submitted: Azure %s, %d of %d lines done", strings.Join(st, ", "), done, total)
	case batch.Harvested:
		return "harvested, but its report is not written"
	}
	return string(j.State) + ", not yet harvested"
}

func lines(j *batch.Job) (done, total int64) {
	for i := range j.Parts {
		p := &j.Parts[i]
		done += p.RequestCounts.Completed + p.RequestCounts.Failed
		total += int64(p.Lines)
	}
	return done, total
}
