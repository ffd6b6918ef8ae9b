package batch_test

import (
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/clocktest"
)

// TestAlerts_LingeringConditions: a job held past its threshold, a batch
// running past its window, and finished output that cannot be copied while
// its expiry nears each raise their alert once (not on every tick), and
// the job still ends harvested once the condition clears.
func TestAlerts_LingeringConditions(t *testing.T) {
	t.Parallel()
	t.Run("held too long", func(t *testing.T) {
		t.Parallel()
		clk := &clocktest.Ahead{}
		e := newEnv(t, envConfig{sim: simConfig(3000, aoaisim.Deployment{Name: batchDep, Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch,
			EnqueuedTokenQuota: 10}), // Azure refuses everything
			tweak: func(o *batch.Options) { o.HeldAlert, o.Now = time.Minute, clk.Now }})
		j := e.submit("contoso", items(3, "h"))
		for range 4 {
			if _, err := e.svc.Poll(e.ctx()); err != nil {
				t.Fatal(err)
			}
			clk.Advance(2 * time.Minute)
		}
		if got := e.get(j.ID); got.State != batch.Held {
			t.Errorf("state %s, want held", got.State)
		}
		if n := e.alerts.Count(batch.AlertHeldTooLong); n != 1 {
			t.Errorf("%d %s alerts over 4 ticks, want 1 (%v)", n, batch.AlertHeldTooLong, e.alerts.Names())
		}
	})
	t.Run("overdue", func(t *testing.T) {
		t.Parallel()
		clk := &clocktest.Ahead{}
		e := newEnv(t, envConfig{sim: simConfig(0), tweak: func(o *batch.Options) { // frozen: it never finishes
			o.CompletionWindow, o.OverdueMargin, o.Now = time.Minute, time.Minute, clk.Now
		}})
		j := e.submit("contoso", items(3, "o"))
		for range 4 {
			if _, err := e.svc.Poll(e.ctx()); err != nil {
				t.Fatal(err)
			}
			clk.Advance(3 * time.Minute)
		}
		if got := e.get(j.ID); got.State != batch.Submitted {
			t.Errorf("state %s, want submitted", got.State)
		}
		if n := e.alerts.Count(batch.AlertOverdue); n != 1 {
			t.Errorf("%d %s alerts, want 1 (%v)", n, batch.AlertOverdue, e.alerts.Names())
		}
	})
	t.Run("output expiring and harvest failing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, envConfig{sim: simConfig(3000), tweak: func(o *batch.Options) {
			o.OutputExpiry, o.ExpiryWarning = time.Hour, 2*time.Hour
		}})
		j := e.submit("contoso", items(3, "x"))
		e.pollUntil(20*time.Second, func(j batch.Job) bool { return j.Parts[0].Status == batch.PartSubmitted }, j.ID)
		waitBatch(t, e, e.get(j.ID).Parts[0].BatchID)
		if err := e.sim.SetFaults([]aoaisim.FaultRule{{Route: aoaisim.RouteFilesContent, ErrorRate: 1, ErrorStatus: 500}}); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			if _, err := e.svc.Poll(e.ctx()); err != nil {
				t.Fatal(err)
			}
		}
		got := e.get(j.ID)
		if got.State != batch.Completed || got.Parts[0].Copied || got.Parts[0].HarvestErrors < 3 {
			t.Errorf("state %s, copied %v, harvest errors %d; want completed, not copied, ≥ 3", got.State, got.Parts[0].Copied, got.Parts[0].HarvestErrors)
		}
		for _, a := range []string{batch.AlertOutputExpiring, batch.AlertHarvestFailing} {
			if n := e.alerts.Count(a); n != 1 {
				t.Errorf("%d %s alerts, want 1 (%v)", n, a, e.alerts.Names())
			}
		}
		if err := e.sim.SetFaults(nil); err != nil {
			t.Fatal(err)
		}
		e.check(e.pollUntil(20*time.Second, harvested, j.ID)[j.ID], map[batch.Outcome]int{batch.OK: 3})
	})
}

// TestAdmission_AgedHeadReserves: a big job held behind a small running
// one is passed over by smaller jobs that fit, unless it has waited longer
// than AgeLimit: then it reserves the deployment and goes first.
func TestAdmission_AgedHeadReserves(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		age      time.Duration
		bigFirst bool
	}{
		{"young head is passed over", time.Hour, false},
		{"aged head reserves", time.Nanosecond, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envConfig{sim: simConfig(100), tweak: func(o *batch.Options) {
				o.Quota = map[string]int64{batchDep: 1000}
				o.AgeLimit = tt.age
			}})
			small1 := e.submit("fabrikam", items(3, "s1"))
			if _, err := e.svc.Poll(e.ctx()); err != nil {
				t.Fatal(err)
			}
			if p := e.get(small1.ID).Parts[0]; p.Status != batch.PartSubmitted {
				t.Fatalf("the first small job is %s, want submitted", p.Status)
			}
			big := e.submit("contoso", items(12, "big")) // does not fit beside small1
			small2 := e.submit("fabrikam", items(3, "s2"))
			got := e.pollUntil(60*time.Second, harvested, small1.ID, big.ID, small2.ID)
			bigFirst := got[big.ID].Parts[0].SubmittedAt.Before(got[small2.ID].Parts[0].SubmittedAt)
			if bigFirst != tt.bigFirst {
				t.Errorf("big job admitted before the second small one: %v, want %v", bigFirst, tt.bigFirst)
			}
		})
	}
}
