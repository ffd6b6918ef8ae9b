package batch

import (
	"testing"
	"time"
)

// azureRun is a batch as Azure runs it, on the test's clock: validating
// until start, then requests done at a rate, faster from speedAt on.
type azureRun struct {
	submitted, start, speedAt time.Time
	total                     int64
	perMinute, fasterPerMin   int64
}

func (a azureRun) at(now time.Time) (AzureStatus, int64) {
	if now.Before(a.start) {
		return AzureValidating, 0
	}
	mins := int64(now.Sub(a.start) / time.Minute)
	done := mins * a.perMinute
	if !a.speedAt.IsZero() && now.After(a.speedAt) {
		done = int64(a.speedAt.Sub(a.start)/time.Minute)*a.perMinute + int64(now.Sub(a.speedAt)/time.Minute)*a.fasterPerMin
	}
	if done >= a.total {
		return AzureCompleted, a.total
	}
	return AzureInProgress, done
}

// end is when the run's last request is done (to the minute).
func (a azureRun) end() time.Time {
	for t := a.start; ; t = t.Add(time.Minute) {
		if s, _ := a.at(t); s == AzureCompleted {
			return t
		}
	}
}

// pollRun drives a part through the tick every minute of a fake clock,
// polling it when pollDue says so, until a poll sees the run completed
// or the clock reaches until. It returns the polls made and when the end
// was seen.
func pollRun(s *Service, j *Job, a azureRun, until time.Time, cancel bool) (polls int, seen time.Time) {
	p := Part{Status: PartSubmitted, BatchID: "batch_1", SubmittedAt: a.submitted, PolledAt: a.submitted,
		AzureStatus: AzureValidating, AzureExpiry: a.submitted.Add(24 * time.Hour), CancelSent: cancel}
	for now := a.submitted.Add(time.Minute); now.Before(until); now = now.Add(time.Minute) {
		if !s.pollDue(j, &p, now) {
			continue
		}
		polls++
		st, done := a.at(now)
		p.PolledAt, p.AzureStatus = now, st
		p.RequestCounts = RequestCounts{Total: a.total, Completed: done}
		if st == AzureCompleted {
			return polls, now
		}
	}
	return polls, time.Time{}
}

func TestPollCadence(t *testing.T) {
	s := &Service{o: Options{PollInterval: time.Minute, PollMaxInterval: 15 * time.Minute}}
	t0 := time.Date(2026, 11, 3, 8, 0, 0, 0, time.UTC)

	t.Run("steady run: a few dozen polls, its end seen within two minutes", func(t *testing.T) {
		// 10,000 requests at 28 a minute: about six hours in progress.
		a := azureRun{submitted: t0, start: t0.Add(5 * time.Minute), total: 10_000, perMinute: 28}
		polls, seen := pollRun(s, &Job{}, a, t0.Add(24*time.Hour), false)
		end := a.end()
		if seen.IsZero() || seen.Sub(end) > 2*time.Minute {
			t.Fatalf("end at %v seen at %v", end, seen)
		}
		every := int(end.Sub(t0) / time.Minute)
		if polls > every/6 || polls < 25 {
			t.Fatalf("%d polls over a %d-minute run, want a few dozen (a poll a minute is %d; at most one per %v is %d)",
				polls, every, every, s.o.PollMaxInterval, every/15)
		}
		t.Logf("%d polls instead of %d; end seen %v late", polls, every, seen.Sub(end))
	})

	t.Run("runs that speed up: their end seen within PollMaxInterval", func(t *testing.T) {
		// 10 a minute, then the rest at once, at every minute from the
		// first hour to the third.
		var worst time.Duration
		for m := 60; m < 180; m++ {
			a := azureRun{submitted: t0, start: t0.Add(5 * time.Minute), total: 100_000, perMinute: 10,
				speedAt: t0.Add(time.Duration(m) * time.Minute), fasterPerMin: 1_000_000}
			_, seen := pollRun(s, &Job{}, a, t0.Add(24*time.Hour), false)
			end := a.end()
			if seen.IsZero() || seen.Sub(end) > s.o.PollMaxInterval {
				t.Fatalf("end at %v seen at %v, want within %v", end, seen, s.o.PollMaxInterval)
			}
			worst = max(worst, seen.Sub(end))
		}
		if worst < 10*time.Minute {
			t.Fatalf("ends seen at most %v late: the stretched polls this test is for did not happen", worst)
		}
	})

	for _, tc := range []struct {
		name   string
		a      azureRun
		cancel bool
		j      Job
	}{
		{"validating: every PollInterval", azureRun{submitted: t0, start: t0.Add(48 * time.Hour), total: 10}, false, Job{}},
		{"in progress with nothing done: every PollInterval", azureRun{submitted: t0, start: t0, total: 10, perMinute: 0}, false, Job{}},
		{"cancellation sent: every PollInterval", azureRun{submitted: t0, start: t0, total: 100_000, perMinute: 10}, true, Job{}},
		{"a job with a deadline: every PollInterval", azureRun{submitted: t0, start: t0, total: 100_000, perMinute: 10}, false,
			Job{CompleteBy: t0.Add(20 * time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			polls, _ := pollRun(s, &tc.j, tc.a, t0.Add(3*time.Hour), tc.cancel)
			if want := 3*60 - 1; polls != want {
				t.Fatalf("%d polls over 3 hours, want %d", polls, want)
			}
		})
	}

	t.Run("near expiry: every PollInterval", func(t *testing.T) {
		p := Part{Status: PartSubmitted, BatchID: "b", AzureStatus: AzureInProgress,
			SubmittedAt: t0, PolledAt: t0.Add(23*time.Hour + 50*time.Minute), AzureExpiry: t0.Add(24 * time.Hour),
			RequestCounts: RequestCounts{Total: 1000, Completed: 10}}
		if got := s.pollGap(&Job{}, &p); got != 150*time.Second {
			t.Fatalf("gap %v ten minutes before expiry, want a quarter of that", got)
		}
		p.PolledAt = t0.Add(23*time.Hour + 57*time.Minute)
		if got := s.pollGap(&Job{}, &p); got != s.o.PollInterval {
			t.Fatalf("gap %v three minutes before expiry, want %v", got, s.o.PollInterval)
		}
		p.PolledAt = t0.Add(2 * time.Hour)
		if got := s.pollGap(&Job{}, &p); got != s.o.PollMaxInterval {
			t.Fatalf("gap %v far from expiry with most requests left, want %v", got, s.o.PollMaxInterval)
		}
	})
}
