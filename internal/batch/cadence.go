package batch

import (
	"time"
)

// Polling cadence by expected progress. A submitted part is asked about
// PollInterval after its last poll, unless what the last poll showed says
// its end is still far off: a batch in progress whose request counts have
// moved has a rate (requests done since its submission over the time
// since), hence an expected time left; the part is then asked about again
// after a quarter of that time, within [PollInterval, PollMaxInterval].
// The end of a batch running as expected is therefore seen at most a
// quarter of its remaining time (and never more than PollMaxInterval)
// late, and a long batch costs Azure a few dozen polls instead of one a
// minute. Everything else is asked about every PollInterval: a batch
// validating (a quota refusal there is requeued as soon as it is seen),
// one in progress with no request done yet (no rate to go by), finalizing,
// cancelling, or with a cancellation sent, one near its expiry, and every
// part of a job with a complete_by (its deadline rule reads the counts).
const pollSpread = 4

// pollGap is how long after its last poll a submitted part is due again.
func (s *Service) pollGap(j *Job, p *Part) time.Duration {
	base := s.o.PollInterval
	if !j.CompleteBy.IsZero() || p.AzureStatus != AzureInProgress || p.CancelSent || p.SubmittedAt.IsZero() {
		return base
	}
	rc := p.RequestCounts
	done := rc.Completed + rc.Failed
	if done <= 0 || rc.Total <= done {
		return base
	}
	elapsed := p.PolledAt.Sub(p.SubmittedAt)
	if elapsed <= 0 {
		return base
	}
	// A quarter of the time left at the rate seen, in float (large counts
	// and long elapsed times would overflow), bounded before converting.
	gap := s.o.PollMaxInterval
	if q := float64(elapsed) * float64(rc.Total-done) / float64(done) / pollSpread; q < float64(gap) {
		gap = time.Duration(q)
	}
	if !p.AzureExpiry.IsZero() {
		// Near the batch's expiry, back to every PollInterval: an
		// expired batch's partial output is harvested when it is seen.
		gap = min(gap, p.AzureExpiry.Sub(p.PolledAt)/pollSpread)
	}
	return max(gap, base)
}

// pollDue reports whether a part's batch is to be asked about now.
func (s *Service) pollDue(j *Job, p *Part, now time.Time) bool {
	return p.Status == PartSubmitted && p.BatchID != "" && now.Sub(p.PolledAt) >= s.pollGap(j, p)
}
