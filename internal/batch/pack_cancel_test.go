package batch_test

import (
	"context"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/poll"
)

// frozenSim is a simulator whose batches do not move until the test sets
// its clock going; lines run at linesPerMinute of simulated time.
func frozenSim(linesPerMinute float64) (aoaisim.Config, *aoaisim.Clock) {
	clock := aoaisim.NewClock(time.Now(), 0)
	cfg := simConfig(0, aoaisim.Deployment{Name: batchDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18",
		Type: aoaisim.TypeGlobalBatch, BatchLinesPerMinute: linesPerMinute})
	cfg.Clock = clock
	return cfg, clock
}

func (e *env) tick() batch.TickReport {
	e.t.Helper()
	rep, err := e.svc.Poll(e.ctx())
	if err != nil {
		e.t.Fatalf("Poll: %v", err)
	}
	return rep
}

// packOf reads the pack a job's part is in.
func (e *env) packOf(j batch.Job) batch.Job {
	e.t.Helper()
	pk, err := e.jobs.Get(context.Background(), batch.PackTenant, j.Parts[0].Pack)
	if err != nil {
		e.t.Fatalf("pack of job %s: %v", j.ID, err)
	}
	return pk
}

// TestPack_CancelBeforeSubmission cancels a packed job while its pack
// waits for quota (another tenant's urgent job fills the deployment): the
// job leaves the pack, its lines are not in the file Azure gets, it ends
// cancelled with nothing billed, and the others run as packed.
func TestPack_CancelBeforeSubmission(t *testing.T) {
	t.Parallel()
	simCfg, simClock := frozenSim(0)
	e, clock := packEnv(t, envConfig{sim: simCfg}, 3)
	urgent := e.submit("contoso", items(40, "u"), func(r *batch.Request) { r.Urgent = true })
	small := e.submitMany(3, 5, func(k int) string { return []string{"t00", "t01", "t02"}[k] })
	var packTokens int64
	for _, j := range small {
		packTokens += j.Parts[0].EstimatedTokens
	}
	// The deployment holds the urgent job, or the pack, not both.
	e.opts.Quota = map[string]int64{batchDep: urgent.Parts[0].EstimatedTokens + packTokens - 1}
	e.svc = e.service()

	e.tick() // the urgent job goes; the small ones wait for their window
	if n := len(e.sim.State().Batches); n != 1 {
		t.Fatalf("%d Azure batches, want the urgent job's alone", n)
	}
	clock.Advance(11 * time.Minute)
	e.tick() // packed, and held for quota
	small = e.reread(small)
	pk := e.packOf(small[0])
	if pk.Pack.Sealed || pk.Parts[0].Status != batch.PartPending || len(pk.Pack.Members) != 3 {
		t.Fatalf("pack %+v: want 3 members, unsealed, pending", pk.Pack)
	}
	if n := len(e.sim.State().Batches); n != 1 {
		t.Fatalf("%d Azure batches, want the pack held", n)
	}
	if v, err := e.svc.Get(e.ctx(), small[0].Tenant, small[0].ID); err != nil || v.State != batch.Held || v.Parts[0].HeldReason != "quota" {
		t.Errorf("a job of the held pack shows %s (%q), %v; want held for quota", v.State, v.Parts[0].HeldReason, err)
	}

	gone, err := e.svc.Cancel(e.ctx(), small[1].Tenant, small[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if gone.State != batch.Cancelled {
		t.Errorf("cancelled job is %s, want cancelled at once", gone.State)
	}
	simClock.SetSpeed(3000)
	e.drain(60 * time.Second)

	var packBatch *aoaisim.BatchState
	st := e.sim.State()
	for k, b := range st.Batches {
		if b.Metadata["tenant"] == batch.PackTenant {
			packBatch = &st.Batches[k]
		}
	}
	if packBatch == nil || len(st.Batches) != 2 {
		t.Fatalf("batches %+v: want the urgent job's and the pack's", st.Batches)
	}
	small = e.reread(small)
	if packBatch.Total != small[0].Items+small[2].Items {
		t.Errorf("the pack's file has %d lines, want %d: the cancelled job's are gone", packBatch.Total, small[0].Items+small[2].Items)
	}
	e.check(small[0], map[batch.Outcome]int{batch.OK: 5})
	e.check(small[2], map[batch.Outcome]int{batch.OK: 5})
	e.check(small[1], map[batch.Outcome]int{batch.CancelledOutcome: 5})
	if u := small[1].Usage(); !u.IsZero() {
		t.Errorf("the cancelled job has usage %+v, want none", u)
	}
	if n := e.ledger.records[batch.LedgerUnit(small[1].ID, 0)]; n != 0 {
		t.Errorf("the cancelled job has %d ledger writes, want none", n)
	}
	if small[1].Final != batch.Cancelled {
		t.Errorf("the cancelled job ended %s", small[1].Final)
	}
}

// TestPack_CancelAfterSubmission cancels packed jobs once their pack runs
// at Azure. One job of a pack whose other job goes on: its lines run
// (they are in the batch, shared) and are billed like any cancelled job's
// partial output; the job ends cancelled. Both jobs of another pack: the
// pack is cancelled at Azure part-way, the lines that ran are billed, the
// rest are reported cancelled.
func TestPack_CancelAfterSubmission(t *testing.T) {
	t.Parallel()
	simCfg, simClock := frozenSim(60)
	e, clock := packEnv(t, envConfig{sim: simCfg}, 4)
	first := e.submitMany(2, 5, func(k int) string { return []string{"t00", "t01"}[k] })
	clock.Advance(11 * time.Minute)
	e.tick()
	second := e.submitMany(2, 10, func(k int) string { return []string{"t02", "t03"}[k] })
	clock.Advance(11 * time.Minute)
	e.tick()
	if n := len(e.sim.State().Batches); n != 2 {
		t.Fatalf("%d Azure batches, want two packs", n)
	}
	first, second = e.reread(first), e.reread(second)
	p1, p2 := e.packOf(first[0]), e.packOf(second[0])
	if p1.ID == p2.ID || p1.Parts[0].BatchID == "" || p2.Parts[0].BatchID == "" {
		t.Fatalf("packs %s and %s: want two, submitted", p1.ID, p2.ID)
	}

	v, err := e.svc.Get(e.ctx(), first[1].Tenant, first[1].ID)
	if err != nil || v.State != batch.Submitted || v.Parts[0].Status != batch.PartSubmitted || v.Parts[0].BatchID != "" ||
		v.Parts[0].RequestCounts.Total != 0 || v.Parts[0].SubmittedAt.IsZero() {
		t.Errorf("a job of the running pack shows %s, part %+v, %v; want submitted, without the shared batch's id or counts", v.State, v.Parts[0], err)
	}

	// Past validation, a few lines of the second pack have run.
	simClock.Advance(2*time.Minute + 3*time.Second)
	poll.Until(t, 20*time.Second, "lines of the second pack ran", func() bool {
		for _, b := range e.sim.State().Batches {
			if b.ID == p2.Parts[0].BatchID {
				return b.Completed >= 2
			}
		}
		return false
	})
	for _, j := range []batch.Job{first[0], second[0], second[1]} {
		if _, err := e.svc.Cancel(e.ctx(), j.Tenant, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	e.tick() // the second pack, all its jobs cancelled, is cancelled at Azure
	simClock.SetSpeed(3000)
	e.drain(60 * time.Second)

	first, second = e.reread(first), e.reread(second)
	e.check(first[0], map[batch.Outcome]int{batch.OK: 5})
	e.check(first[1], map[batch.Outcome]int{batch.OK: 5})
	if first[0].Final != batch.Cancelled || first[1].Final != batch.Completed {
		t.Errorf("first pack's jobs ended %s and %s, want cancelled and completed", first[0].Final, first[1].Final)
	}
	var ran int64
	for _, j := range second {
		e.check(j, map[batch.Outcome]int{batch.CancelledOutcome: -1})
		if j.Final != batch.Cancelled {
			t.Errorf("job %s ended %s, want cancelled", j.ID, j.Final)
		}
		ran += j.Counts().OK
		if j.Usage().Requests != j.Counts().OK {
			t.Errorf("job %s: %d requests billed, %d lines ran", j.ID, j.Usage().Requests, j.Counts().OK)
		}
	}
	for _, b := range e.sim.State().Batches {
		if b.ID == p2.Parts[0].BatchID {
			if b.Status != "cancelled" || int64(b.Completed) != ran || ran == 0 {
				t.Errorf("second pack's batch %s with %d lines completed; its jobs have %d that ran", b.Status, b.Completed, ran)
			}
		}
	}
}
