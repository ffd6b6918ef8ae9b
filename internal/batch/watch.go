package batch

import (
	"context"
)

// watched is an alert condition found on a job.
type watched struct {
	name, msg string
	fields    map[string]any
}

// watch raises the alerts of conditions that persist rather than happen:
// a job held too long, a batch running past its window, output that Azure
// will delete before it is harvested. Each is raised at most once per
// Realert per job; the times are stored with the job. A job held too long
// is told to the Announcer too, however old it is.
func (s *Service) watch(ctx context.Context, j Job) (Job, error) {
	now := s.now()
	var found []watched
	for i := range j.Parts {
		p := &j.Parts[i]
		switch {
		case p.Status == PartPending && !p.HeldSince.IsZero() && now.Sub(p.HeldSince) > s.o.HeldAlert:
			found = append(found, watched{AlertHeldTooLong, "batch job held for quota longer than allowed",
				map[string]any{"part": p.Index, "held_since": p.HeldSince, "reason": p.HeldReason, "deployment": p.Deployment}})
		case p.Status == PartSubmitted && !p.SubmittedAt.IsZero() && now.Sub(p.SubmittedAt) > s.o.CompletionWindow+s.o.OverdueMargin:
			found = append(found, watched{AlertOverdue, "batch job runs past its completion window",
				map[string]any{"part": p.Index, "batch_id": p.BatchID, "submitted_at": p.SubmittedAt, "azure_status": string(p.AzureStatus)}})
		case p.Status == PartDone && !p.Copied && !p.OutputExpiresAt.IsZero() && p.OutputExpiresAt.Sub(now) < s.o.ExpiryWarning:
			found = append(found, watched{AlertOutputExpiring, "a finished batch's output is not harvested and Azure deletes it soon",
				map[string]any{"part": p.Index, "batch_id": p.BatchID, "output_expires_at": p.OutputExpiresAt}})
		}
	}
	if len(found) == 0 {
		return j, nil
	}
	var raise []watched
	stored, err := s.update(ctx, j, func(j *Job) error {
		raise = raise[:0]
		seen := map[string]bool{}
		for _, w := range found {
			if seen[w.name] {
				continue
			}
			seen[w.name] = true
			if s.due(j, w.name) {
				raise = append(raise, w)
			}
		}
		if len(raise) == 0 {
			return errSkip
		}
		return nil
	})
	if err != nil {
		return j, err
	}
	for _, w := range raise {
		s.raise(ctx, &stored, w.name, w.msg, w.fields)
		if w.name == AlertHeldTooLong {
			s.tell(ctx, stored, "held too long")
		}
	}
	return stored, nil
}
