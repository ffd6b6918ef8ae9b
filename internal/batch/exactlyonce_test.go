package batch_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/aoaisim"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/blobstore"
)

// TestExactlyOnce_ConcurrentPollers runs four pollers at once, as a
// scaled-out app would, until three jobs are harvested: each part is
// harvested by one of them (one ledger write, one download per file), and
// the usage is exact.
func TestExactlyOnce_ConcurrentPollers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(3000)})
	var ids []string
	for k := range 3 {
		ids = append(ids, e.submit([]string{"contoso", "fabrikam"}[k%2], items(15, "x")).ID)
	}
	var wg sync.WaitGroup
	var stop atomic.Bool
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := e.service() // a poller in another instance
			for !stop.Load() {
				if _, err := svc.Poll(e.ctx()); err != nil {
					t.Errorf("Poll: %v", err)
					return
				}
			}
		}()
	}
	got := e.pollUntil(45*time.Second, harvested, ids...)
	stop.Store(true)
	wg.Wait()
	for _, id := range ids {
		e.check(got[id], map[batch.Outcome]int{batch.OK: 15})
		if n := e.ledger.records[batch.LedgerUnit(id, 0)]; n != 1 {
			t.Errorf("job %s: %d ledger writes, want 1", id, n)
		}
	}
	if n := e.sim.Stats().Routes[aoaisim.RouteFilesContent]; n != 6 {
		t.Errorf("%d downloads of output and error files for 3 jobs, want 6 (one copy each)", n)
	}
	if n := len(e.sim.State().Batches); n != 3 {
		t.Errorf("%d Azure batches for 3 jobs, want 3", n)
	}
}

// crashingBlobs makes the process "die" when the harvest, having copied a
// part's files, starts its results file: the context is cancelled, so
// nothing more is written, not even the lease's release.
type crashingBlobs struct {
	*blobstore.Store
	crash  context.CancelFunc
	active atomic.Bool
}

func (c *crashingBlobs) Create(ctx context.Context, container, name string, md map[string]string) (*blobstore.Writer, error) {
	if strings.HasSuffix(name, ".results.jsonl") && c.active.CompareAndSwap(true, false) {
		c.crash()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return c.Store.Create(ctx, container, name, md)
}

// TestExactlyOnce_CrashBetweenCopyAndMark kills the harvest after the copy
// (the next poll, in a new process, finishes from the copy once the dead
// poller's lease has run out), and after the ledger write (the re-harvest
// rewrites the same row): the usage is counted once either way.
func TestExactlyOnce_CrashBetweenCopyAndMark(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		crash func(e *env, cb *crashingBlobs)
	}{
		{"after the copy", func(e *env, cb *crashingBlobs) { cb.active.Store(true) }},
		{"after the ledger write", func(e *env, cb *crashingBlobs) { e.ledger.failAfterWrite.Store(1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envConfig{sim: simConfig(3000)})
			j := e.submit("contoso", items(10, "k"))
			e.pollUntil(20*time.Second, func(j batch.Job) bool { return j.Parts[0].Status == batch.PartSubmitted }, j.ID)
			// Wait for the batch to end at Azure, then crash one harvest.
			deadline := time.Now().Add(20 * time.Second)
			for b, _ := e.azure.GetBatch(context.Background(), e.get(j.ID).Parts[0].BatchID); !b.FilesReady(); b, _ = e.azure.GetBatch(context.Background(), b.ID) {
				if time.Now().After(deadline) {
					t.Fatal("batch did not finish")
				}
				time.Sleep(10 * time.Millisecond)
			}
			ctx, crash := context.WithCancel(e.ctx())
			cb := &crashingBlobs{Store: e.blobs, crash: crash}
			o := e.opts
			o.Blobs = cb
			dying, err := batch.New(o)
			if err != nil {
				t.Fatal(err)
			}
			tt.crash(e, cb)
			_, _ = dying.Poll(ctx)
			crash()
			mid := e.get(j.ID)
			if mid.State == batch.Harvested {
				t.Fatalf("the crashed harvest finished")
			}
			if tt.name == "after the copy" && (!mid.Parts[0].Copied || mid.Lease.Owner == "") {
				t.Fatalf("after the crash: copied %v, lease %+v; want a recorded copy and a dead poller's lease", mid.Parts[0].Copied, mid.Lease)
			}
			downloads := e.sim.Stats().Routes[aoaisim.RouteFilesContent]
			got := e.pollUntil(20*time.Second, harvested, j.ID)[j.ID]
			e.check(got, map[batch.Outcome]int{batch.OK: 10})
			if n := e.sim.Stats().Routes[aoaisim.RouteFilesContent]; n != downloads {
				t.Errorf("the recovery downloaded from Azure %d more times; it must read the copy", n-downloads)
			}
			if tt.name == "after the ledger write" && e.ledger.records[batch.LedgerUnit(j.ID, 0)] != 2 {
				t.Errorf("%d ledger writes, want 2 (the crashed one and the re-harvest's)", e.ledger.records[batch.LedgerUnit(j.ID, 0)])
			}
			entries, err := e.ledger.Month(context.Background(), "contoso", got.Month())
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("%d ledger rows, want 1", len(entries))
			}
		})
	}
}

// TestLateHarvest_OutputExpired: a finished batch whose output Azure has
// already deleted (harvested too late) raises output_lost, marks its items
// failed with output_lost, records no usage and pretends nothing.
func TestLateHarvest_OutputExpired(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(3000)})
	j := e.submit("contoso", items(8, "late"))
	e.pollUntil(20*time.Second, func(j batch.Job) bool { return j.Parts[0].Status == batch.PartSubmitted }, j.ID)
	id := e.get(j.ID).Parts[0].BatchID
	deadline := time.Now().Add(20 * time.Second)
	for b, _ := e.azure.GetBatch(context.Background(), id); !b.FilesReady(); b, _ = e.azure.GetBatch(context.Background(), id) {
		if time.Now().After(deadline) {
			t.Fatal("batch did not finish")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.sim.Clock().Advance(31 * 24 * time.Hour) // past output_expires_after
	deadline = time.Now().Add(10 * time.Second)
	for len(e.sim.State().Files) > 1 { // the input file has its own expiry
		if time.Now().After(deadline) {
			t.Fatalf("simulator still has files %+v", e.sim.State().Files)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := e.pollUntil(20*time.Second, harvested, j.ID)[j.ID]
	res := e.check(got, map[batch.Outcome]int{batch.FailedOutcome: 8})
	for _, l := range res {
		if l.Error == nil || l.Error.Code != "output_lost" {
			t.Errorf("result %+v, want failed with output_lost", l)
		}
	}
	if !got.Parts[0].OutputLost || e.alerts.Count(batch.AlertOutputLost) != 1 {
		t.Errorf("output lost %v, alerts %v; want lost and one %s", got.Parts[0].OutputLost, e.alerts.Names(), batch.AlertOutputLost)
	}
	if n := e.ledger.records[batch.LedgerUnit(j.ID, 0)]; n != 0 {
		t.Errorf("%d ledger writes for lost output, want 0", n)
	}
}
