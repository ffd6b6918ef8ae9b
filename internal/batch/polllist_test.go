package batch_test

import (
	"context"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
)

// submitted submits n one-part jobs and runs the tick that creates their
// batches (the simulator's clock is frozen, so they stay validating).
func submitted(t *testing.T, e *env, n int) []string {
	t.Helper()
	var ids []string
	for k := range n {
		ids = append(ids, e.submit([]string{"contoso", "fabrikam"}[k%2], items(3, "l")).ID)
	}
	if _, err := e.svc.Poll(e.ctx()); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if p := e.get(id).Parts[0]; p.Status != batch.PartSubmitted {
			t.Fatalf("job %s: part %s, want submitted", id, p.Status)
		}
	}
	return ids
}

// foreign creates a batch nobody's job owns, newer than every other.
func foreign(t *testing.T, e *env, inputFileID string, k int) {
	t.Helper()
	if _, err := e.azure.CreateBatch(context.Background(), batch.Submission{InputFileID: inputFileID, JobID: "elsewhere", Attempt: k}); err != nil {
		t.Fatal(err)
	}
}

// pollCounting cancels the jobs' batches at Azure behind the service's
// back, runs one tick, checks that the tick saw each batch's new status,
// and returns the batch list pages and GETs it asked the simulator for.
func pollCounting(t *testing.T, e *env, ids []string) (rep batch.TickReport, pages, gets int64) {
	t.Helper()
	for _, id := range ids {
		if _, err := e.azure.CancelBatch(context.Background(), e.get(id).Parts[0].BatchID); err != nil {
			t.Fatal(err)
		}
	}
	before := e.sim.Stats().Routes
	rep, err := e.svc.Poll(e.ctx())
	if err != nil {
		t.Fatal(err)
	}
	after := e.sim.Stats().Routes
	for _, id := range ids {
		if p := e.get(id).Parts[0]; p.AzureStatus != batch.AzureCancelling && p.AzureStatus != batch.AzureCancelled {
			t.Errorf("job %s: Azure status %q after the tick, want the cancellation seen", id, p.AzureStatus)
		}
	}
	return rep, after[aoaisim.RouteBatchesList] - before[aoaisim.RouteBatchesList], after[aoaisim.RouteBatchesGet] - before[aoaisim.RouteBatchesGet]
}

// TestPoll_FromBatchList: a tick reads five due batches from Azure's batch
// list, two to a page (across page boundaries, the last page short), with
// no GET; every job is polled and recorded.
func TestPoll_FromBatchList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(0), listPage: 2})
	ids := submitted(t, e, 5)
	rep, pages, gets := pollCounting(t, e, ids)
	if rep.Polled != 5 || rep.Failed != 0 || pages != 3 || gets != 0 {
		t.Errorf("tick %+v with %d list pages and %d GETs; want 5 polled, 3 pages, no GET", rep, pages, gets)
	}
}

// TestPoll_BatchMissingFromList: the list's first page holds only batches
// of others; having read as many pages as batches are due, the tick GETs
// its batch, which is polled all the same.
func TestPoll_BatchMissingFromList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(0), listPage: 1})
	ids := submitted(t, e, 1)
	foreign(t, e, e.get(ids[0]).Parts[0].InputFileID, 0)
	rep, pages, gets := pollCounting(t, e, ids)
	if rep.Polled != 1 || rep.Failed != 0 || pages != 1 || gets != 1 {
		t.Errorf("tick %+v with %d list pages and %d GETs; want 1 polled, 1 page, 1 GET", rep, pages, gets)
	}
}

// TestPoll_BatchOlderThanListWindow: Azure's clock is two hours behind
// ours, so the batches look created before the oldest due part was
// submitted: the list is read down to that point only (one page, though
// two are due) and both batches are asked for with a GET.
func TestPoll_BatchOlderThanListWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(0), listPage: 1, tweak: func(o *batch.Options) {
		o.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	}})
	ids := submitted(t, e, 2)
	foreign(t, e, e.get(ids[0]).Parts[0].InputFileID, 0)
	rep, pages, gets := pollCounting(t, e, ids)
	if rep.Polled != 2 || rep.Failed != 0 || pages != 1 || gets != 2 {
		t.Errorf("tick %+v with %d list pages and %d GETs; want 2 polled, 1 page, 2 GETs", rep, pages, gets)
	}
}

// TestPoll_BatchListFails: when the list fails, every due batch is asked
// for with a GET and the tick goes on.
func TestPoll_BatchListFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(0)})
	ids := submitted(t, e, 3)
	if err := e.sim.SetFaults([]aoaisim.FaultRule{{Route: aoaisim.RouteBatchesList, ErrorRate: 1}}); err != nil {
		t.Fatal(err)
	}
	rep, pages, gets := pollCounting(t, e, ids)
	if rep.Polled != 3 || rep.Failed != 0 || pages == 0 || gets != 3 {
		t.Errorf("tick %+v with %d list requests and %d GETs; want 3 polled, the list tried, 3 GETs", rep, pages, gets)
	}
}
