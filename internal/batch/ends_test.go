package batch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/tenant"
)

// TestEnds covers the ways a job ends other than completing: its window
// expiring with part of the work done, failing validation, and Azure's
// enqueued-token quota refusing it in either form (which holds it and
// resubmits it later). Each ends harvested with the right per-item
// outcomes, exact usage and the right alerts.
func TestEnds(t *testing.T) {
	t.Parallel()
	slow := func(speed, linesPerMinute float64, window time.Duration) aoaisim.Config {
		c := simConfig(speed)
		c.Batch.LinesPerMinute = linesPerMinute
		c.Batch.CompletionWindow = aoaisim.Duration(window)
		return c
	}
	quota := func(behaviour string) aoaisim.Config {
		// Slow enough that the first job still runs when the second is
		// created or validated, however loaded the machine.
		c := simConfig(300, aoaisim.Deployment{Name: batchDep, Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch,
			EnqueuedTokenQuota: 1200, QuotaBehaviour: behaviour})
		c.Batch.LinesPerMinute = 100
		return c
	}
	tests := []struct {
		name   string
		sim    aoaisim.Config
		jobs   int // jobs of 12 items, submitted together
		final  batch.State
		want   map[batch.Outcome]int
		alerts []string
		check  func(t *testing.T, e *env, jobs []batch.Job)
	}{
		{
			name:   "expired with partial output",
			sim:    slow(3000, 5, 3*time.Minute), // 2 min validating, then 5 lines a minute for 1 minute
			jobs:   1,
			final:  batch.Expired,
			want:   map[batch.Outcome]int{batch.OK: -1, batch.ExpiredOutcome: -1, batch.FailedOutcome: 0},
			alerts: []string{batch.AlertExpired},
		},
		{
			name: "failed at validation",
			sim: simConfig(3000, aoaisim.Deployment{Name: "another-batch", Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch},
				aoaisim.Deployment{Name: "chat", Model: "gpt-4o-mini"}),
			jobs:   1,
			final:  batch.Failed,
			want:   map[batch.Outcome]int{batch.FailedOutcome: 12},
			alerts: []string{batch.AlertFailed},
			check: func(t *testing.T, e *env, jobs []batch.Job) {
				for _, l := range e.results(jobs[0]) {
					if l.Error == nil || l.Error.Code == "" || l.Usage != nil {
						t.Errorf("result %+v: want the validation error's code and no usage", l)
					}
				}
				if n := e.ledger.records[batch.LedgerUnit(jobs[0].ID, 0)]; n != 0 {
					t.Errorf("%d ledger records for a job that ran nothing", n)
				}
			},
		},
		{
			name: "completed before its output file is there",
			sim: func() aoaisim.Config {
				c := simConfig(3000)
				c.Faults = []aoaisim.FaultRule{{Deployment: batchDep, OutputFileDelay: aoaisim.Duration(20 * time.Minute)}}
				return c
			}(),
			jobs:  1,
			final: batch.Completed,
			want:  map[batch.Outcome]int{batch.OK: 12},
		},
		{
			name:  "token_limit_exceeded at create",
			sim:   quota(aoaisim.QuotaFailFast),
			jobs:  2,
			final: batch.Completed,
			want:  map[batch.Outcome]int{batch.OK: 12},
			check: func(t *testing.T, e *env, jobs []batch.Job) {
				refused := 0
				for _, j := range jobs {
					refused += j.Parts[0].Refusals
				}
				if refused == 0 {
					t.Error("no part was refused by the quota; the test does not test it")
				}
				if n := len(e.sim.State().Batches); n != 2 {
					t.Errorf("simulator has %d batches, want 2 (a refused create makes none)", n)
				}
			},
		},
		{
			name:  "token_limit_exceeded at validation",
			sim:   quota(aoaisim.QuotaFailAtValidation),
			jobs:  2,
			final: batch.Completed,
			want:  map[batch.Outcome]int{batch.OK: 12},
			check: func(t *testing.T, e *env, jobs []batch.Job) {
				prev := 0
				for _, j := range jobs {
					prev += len(j.Parts[0].PreviousBatchIDs)
				}
				if prev == 0 {
					t.Error("no batch failed with token_limit_exceeded; the test does not test it")
				}
				if n := len(e.sim.State().Batches); n != 2+prev {
					t.Errorf("simulator has %d batches, want %d", n, 2+prev)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envConfig{sim: tt.sim})
			var ids []string
			for k := range tt.jobs {
				ids = append(ids, e.submit([]string{"contoso", "fabrikam"}[k%2], items(12, "it")).ID)
			}
			got := e.pollUntil(45*time.Second, harvested, ids...)
			var jobs []batch.Job
			for _, id := range ids {
				j := got[id]
				jobs = append(jobs, j)
				if j.Final != tt.final {
					t.Errorf("job %s final %s, want %s", id, j.Final, tt.final)
				}
				e.check(j, tt.want)
			}
			for _, a := range tt.alerts {
				if e.alerts.Count(a) != 1 {
					t.Errorf("alerts %v, want one %s", e.alerts.Names(), a)
				}
			}
			if len(tt.alerts) == 0 && len(e.alerts.Names()) > 0 {
				t.Errorf("alerts %v, want none", e.alerts.Names())
			}
			if tt.check != nil {
				tt.check(t, e, jobs)
			}
		})
	}
}

// TestCancel_HalfWay cancels a running job once some of its requests have
// run: the rest are cancelled, the partial output is harvested and billed.
func TestCancel_HalfWay(t *testing.T) {
	t.Parallel()
	// The simulator's clock moves only when the test says: the batch cannot
	// finish before the cancel reaches it, however slow the machine.
	cfg, clock := frozenSim(4) // a line every 15 simulated seconds
	e := newEnv(t, envConfig{sim: cfg})
	j := e.submit("contoso", items(40, "c"))
	e.pollUntil(30*time.Second, func(j batch.Job) bool { return j.State == batch.Submitted }, j.ID)
	clock.Advance(2*time.Minute + 30*time.Second) // past validation, two lines run
	e.pollUntil(30*time.Second, func(j batch.Job) bool {
		return j.Parts[0].RequestCounts.Completed >= 2
	}, j.ID)
	// Another tenant cannot cancel it, nor see it.
	if _, err := e.svc.Cancel(e.ctx(), "fabrikam", j.ID); !errors.Is(err, batch.ErrNotFound) {
		t.Fatalf("Cancel by another tenant = %v, want ErrNotFound", err)
	}
	c, err := e.svc.Cancel(e.ctx(), "contoso", j.ID)
	if err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if !c.CancelRequested || !c.Parts[0].CancelSent {
		t.Errorf("after Cancel: requested %v, sent %v", c.CancelRequested, c.Parts[0].CancelSent)
	}
	if _, err := e.svc.Cancel(e.ctx(), "contoso", j.ID); err != nil {
		t.Errorf("second Cancel = %v, want nil", err)
	}
	clock.SetSpeed(240) // the cancel completes at Azure (a simulated minute)
	got := e.pollUntil(30*time.Second, harvested, j.ID)[j.ID]
	if got.Final != batch.Cancelled || got.Parts[0].AzureStatus != batch.AzureCancelled {
		t.Errorf("final %s, azure %s; want cancelled", got.Final, got.Parts[0].AzureStatus)
	}
	e.check(got, map[batch.Outcome]int{batch.OK: -1, batch.CancelledOutcome: -1})
	if got.Usage().CompletionTokens == 0 {
		t.Error("the partial output was not billed")
	}
	if _, err := e.svc.Cancel(e.ctx(), "contoso", j.ID); !errors.Is(err, batch.ErrFinished) {
		t.Errorf("Cancel of a harvested job = %v, want ErrFinished", err)
	}
}

// TestCancel_Held cancels a job before it is submitted: it ends at once,
// nothing reaches Azure, and every item is cancelled.
func TestCancel_Held(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(3000)})
	j := e.submit("contoso", items(5, "h"))
	c, err := e.svc.Cancel(context.Background(), "contoso", j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.State != batch.Cancelled {
		t.Errorf("state after cancelling an accepted job = %s, want cancelled", c.State)
	}
	got := e.pollUntil(10*time.Second, harvested, j.ID)[j.ID]
	e.check(got, map[batch.Outcome]int{batch.CancelledOutcome: 5})
	if st := e.sim.State(); len(st.Batches) != 0 || len(st.Files) != 0 {
		t.Errorf("simulator has %d batches and %d files, want none", len(st.Batches), len(st.Files))
	}
}

// TestSubmit_BudgetCountsUnfinishedJobs: the budget check counts the
// estimates of the tenant's jobs not yet harvested, whose usage is not in
// the ledger yet; a refused submission leaves nothing behind.
func TestSubmit_BudgetCountsUnfinishedJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(3000)})
	bigAllowance := func(r *batch.Request) { r.MaxTokens = 1000 } // estimates far above the usage
	first := e.submit("contoso", items(5, "b1"), bigAllowance)
	tn := e.tenants["contoso"]
	tn.MonthlyTokenBudget = first.EstimatedTokens * 3 / 2
	_, _, err := e.svc.Submit(e.ctx(), tn, batch.Request{Alias: "summarize", MaxTokens: 1000, Items: items(5, "b2")})
	if !errors.Is(err, ledger.ErrBudgetExceeded) {
		t.Fatalf("second job within budget alone but not with the first: %v, want ErrBudgetExceeded", err)
	}
	if jobs, _ := e.jobs.List(context.Background(), "contoso", "", "", 10); len(jobs) != 1 {
		t.Errorf("%d jobs recorded, want 1", len(jobs))
	}
	// Once the first is harvested its real usage counts instead.
	got := e.pollUntil(30*time.Second, harvested, first.ID)[first.ID]
	if u := got.Usage(); u.PromptTokens+u.CompletionTokens >= first.EstimatedTokens/2 {
		t.Fatalf("the first job used %d tokens; the check below needs it well under its estimate %d", u.PromptTokens+u.CompletionTokens, first.EstimatedTokens)
	}
	if _, _, err := e.svc.Submit(e.ctx(), tn, batch.Request{Alias: "summarize", MaxTokens: 1000, Items: items(5, "b3")}); err != nil {
		t.Errorf("after the first job's harvest: %v, want accepted", err)
	}
}

// cancelDuringCreate cancels the job while its batch is being created.
type cancelDuringCreate struct {
	batch.Azure
	cancel func()
}

func (c cancelDuringCreate) CreateBatch(ctx context.Context, s batch.Submission) (batch.Created, error) {
	c.cancel()
	return c.Azure.CreateBatch(ctx, s)
}

// TestCancel_DuringAdmission: the tenant cancels while the poller creates
// the job's Azure batch. The batch that was created is not lost: it is
// recorded, cancelled at Azure, and harvested; nothing is left running.
func TestCancel_DuringAdmission(t *testing.T) {
	t.Parallel()
	cfg := simConfig(240)
	cfg.Batch.LinesPerMinute = 4
	e := newEnv(t, envConfig{sim: cfg})
	j := e.submit("contoso", items(20, "r"))
	o := e.opts
	o.Azure = cancelDuringCreate{Azure: e.azure, cancel: func() {
		if _, err := e.svc.Cancel(context.Background(), "contoso", j.ID); err != nil {
			t.Errorf("Cancel: %v", err)
		}
	}}
	racing, err := batch.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := racing.Poll(e.ctx()); err != nil {
		t.Fatal(err)
	}
	mid := e.get(j.ID)
	if !mid.CancelRequested || mid.Parts[0].BatchID == "" || mid.Parts[0].Status != batch.PartSubmitted {
		t.Fatalf("after the race: cancel requested %v, part %s with batch %q; want the created batch recorded as submitted",
			mid.CancelRequested, mid.Parts[0].Status, mid.Parts[0].BatchID)
	}
	got := e.pollUntil(30*time.Second, harvested, j.ID)[j.ID]
	e.check(got, map[batch.Outcome]int{})
	for _, b := range e.sim.State().Batches {
		if b.Status != "cancelled" && b.Status != "completed" {
			t.Errorf("Azure batch %s left %s", b.ID, b.Status)
		}
	}
	if got.Final != batch.Cancelled && got.Final != batch.Completed {
		t.Errorf("final %s", got.Final)
	}
}

// TestPoll_OneBrokenJob: a job whose harvest keeps failing (its index is
// gone) does not stop the others; it raises harvest_failing.
func TestPoll_OneBrokenJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(3000)})
	broken := e.submit("contoso", items(4, "broken"))
	fine := e.submit("fabrikam", items(4, "fine"))
	if err := e.blobs.Delete(context.Background(), e.cont.Inputs, broken.Parts[0].IndexBlob); err != nil {
		t.Fatal(err)
	}
	got := e.pollUntil(30*time.Second, func(j batch.Job) bool {
		return j.State == batch.Harvested || j.Parts[0].HarvestErrors >= 3
	}, broken.ID, fine.ID)
	e.check(got[fine.ID], map[batch.Outcome]int{batch.OK: 4})
	if b := got[broken.ID]; b.State == batch.Harvested || b.Parts[0].HarvestErrors < 3 {
		t.Errorf("broken job: %s with %d harvest errors", b.State, b.Parts[0].HarvestErrors)
	}
	if e.alerts.Count(batch.AlertHarvestFailing) != 1 {
		t.Errorf("alerts %v, want one %s", e.alerts.Names(), batch.AlertHarvestFailing)
	}
}

// TestSubmit_SuspendedTenant: a suspended tenant's submission is refused
// (the API refuses its credential already; other callers of Submit too).
func TestSubmit_SuspendedTenant(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(3000)})
	tn := e.tenants["contoso"]
	tn.State = tenant.Suspended
	if _, _, err := e.svc.Submit(e.ctx(), tn, batch.Request{Alias: "summarize", Items: items(1, "s")}); !errors.Is(err, tenant.ErrSuspended) {
		t.Errorf("Submit for a suspended tenant = %v, want ErrSuspended", err)
	}
}
