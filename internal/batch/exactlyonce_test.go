package batch_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/testing/poll"
)

// TestExactlyOnce_ConcurrentPollers runs four pollers at once, as a
// scaled-out app would, until three jobs are harvested: each part is
// harvested by one of them (one ledger write, one download per file), and
// the usage is exact.
//
// No poller dies here, so every lease is live until its holder releases
// it: the leases are the production length. With the other tests' 3 s
// lease a harvest slowed past 3 s by a loaded machine let a second poller
// take the job over and copy the files again, which is right for a poller
// that died (TestExactlyOnce_CrashMidHarvest proves that) but is not what
// this test counts.
func TestExactlyOnce_ConcurrentPollers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(3000), tweak: func(o *batch.Options) { o.LeaseTTL = batch.DefaultLeaseTTL }})
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
	got := e.pollUntil(90*time.Second, harvested, ids...)
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
// crashingBlobs kills a harvest, as if its process died, when it first
// reads the part's index: in the middle of the pass over Azure's output,
// with the copy and the results file being written.
type crashingBlobs struct {
	*blobstore.Store
	crash  context.CancelFunc
	active atomic.Bool
}

func (c *crashingBlobs) OpenAt(ctx context.Context, container, name string, off int64) (io.ReadCloser, error) {
	if strings.HasSuffix(name, ".index.jsonl") && c.active.CompareAndSwap(true, false) {
		c.crash()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return c.Store.OpenAt(ctx, container, name, off)
}

// crashingLedger kills a harvest just before it writes the ledger: after
// the copies and the results are stored and recorded.
type crashingLedger struct {
	batch.Ledger
	crash  context.CancelFunc
	active atomic.Bool
}

func (c *crashingLedger) Record(ctx context.Context, e ledger.Entry) error {
	if c.active.CompareAndSwap(true, false) {
		c.crash()
		<-ctx.Done()
		return ctx.Err()
	}
	return c.Ledger.Record(ctx, e)
}

// TestExactlyOnce_CrashMidHarvest kills the harvest in the middle of its
// pass over Azure's output (nothing is recorded or booked, and the next
// poll does the pass again from Azure), after the copies are recorded (the
// next poll finishes from the copies, never from Azure) and after the
// ledger write (the re-harvest rewrites the same row): each time in a new
// process once the dead poller's lease has run out, and the usage is
// counted once.
func TestExactlyOnce_CrashMidHarvest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		crash func(e *env, cb *crashingBlobs, cl *crashingLedger)
	}{
		{"mid-pass", func(e *env, cb *crashingBlobs, cl *crashingLedger) { cb.active.Store(true) }},
		{"after the copy", func(e *env, cb *crashingBlobs, cl *crashingLedger) { cl.active.Store(true) }},
		{"after the ledger write", func(e *env, cb *crashingBlobs, cl *crashingLedger) { e.ledger.failAfterWrite.Store(1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envConfig{sim: simConfig(3000)})
			j := e.submit("contoso", items(10, "k"))
			e.pollUntil(20*time.Second, func(j batch.Job) bool { return j.Parts[0].Status == batch.PartSubmitted }, j.ID)
			// Wait for the batch to end at Azure, then crash one harvest.
			e.waitBatchEnd(e.get(j.ID).Parts[0].BatchID)
			ctx, crash := context.WithCancel(e.ctx())
			cb := &crashingBlobs{Store: e.blobs, crash: crash}
			cl := &crashingLedger{Ledger: e.ledger, crash: crash}
			o := e.opts
			o.Blobs, o.Ledger = cb, cl
			dying, err := batch.New(o)
			if err != nil {
				t.Fatal(err)
			}
			tt.crash(e, cb, cl)
			_, _ = dying.Poll(ctx)
			crash()
			mid := e.get(j.ID)
			if mid.State == batch.Harvested {
				t.Fatalf("the crashed harvest finished")
			}
			unit := batch.LedgerUnit(j.ID, 0)
			switch tt.name {
			case "mid-pass":
				if mid.Parts[0].Copied || mid.Lease.Owner == "" || e.ledger.records[unit] != 0 {
					t.Fatalf("after a crash mid-pass: copied %v, lease %+v, %d ledger writes; want no copy recorded, a dead poller's lease, no ledger write", mid.Parts[0].Copied, mid.Lease, e.ledger.records[unit])
				}
				results := j.Tenant + "/" + j.ID + "/part-0.results.jsonl.gz"
				if _, err := e.blobs.Stat(context.Background(), e.cont.Results, results); !errors.Is(err, object.ErrNotFound) {
					t.Errorf("results file after a crash mid-pass: %v, want none committed", err)
				}
			case "after the copy":
				if !mid.Parts[0].Copied || mid.Lease.Owner == "" || e.ledger.records[unit] != 0 {
					t.Fatalf("after the crash: copied %v, lease %+v, %d ledger writes; want a recorded copy, a dead poller's lease, no ledger write", mid.Parts[0].Copied, mid.Lease, e.ledger.records[unit])
				}
			}
			downloads := e.sim.Stats().Routes[aoaisim.RouteFilesContent]
			got := e.pollUntil(20*time.Second, harvested, j.ID)[j.ID]
			e.check(got, map[batch.Outcome]int{batch.OK: 10})
			again := e.sim.Stats().Routes[aoaisim.RouteFilesContent] - downloads
			files := int64(0)
			for _, id := range []string{got.Parts[0].OutputFileID, got.Parts[0].ErrorFileID} {
				if id != "" {
					files++
				}
			}
			if tt.name == "mid-pass" && again != files {
				t.Errorf("the recovery downloaded from Azure %d times, want once per file (%d): nothing was recorded", again, files)
			}
			if tt.name != "mid-pass" && again != 0 {
				t.Errorf("the recovery downloaded from Azure %d more times; it must read the copy", again)
			}
			want := 1
			if tt.name == "after the ledger write" {
				want = 2 // the crashed one and the re-harvest's
			}
			if n := e.ledger.records[unit]; n != want {
				t.Errorf("%d ledger writes, want %d", n, want)
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
	e.waitBatchEnd(id)
	e.sim.Clock().Advance(31 * 24 * time.Hour) // past output_expires_after
	// The input file has its own expiry: only it is left.
	if !poll.Within(10*time.Second, func() bool { return len(e.sim.State().Files) <= 1 }) {
		t.Fatalf("simulator still has files %+v", e.sim.State().Files)
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
