package batch_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/poll"
)

// crashingJobs kills the process (cancels its context) once a pack's
// harvest has delivered to `after` of its jobs.
type crashingJobs struct {
	batch.JobStore
	crash context.CancelFunc
	after atomic.Int32
}

func (c *crashingJobs) Update(ctx context.Context, j batch.Job) (batch.Job, error) {
	stored, err := c.JobStore.Update(ctx, j)
	if p := &j.Parts[0]; err == nil && p.Pack != "" && p.Status == batch.PartDone && p.HarvestedAt.IsZero() {
		if c.after.Add(-1) == 0 {
			c.crash()
			<-ctx.Done()
			return batch.Job{}, ctx.Err()
		}
	}
	return stored, err
}

// TestPack_HarvestRepeatedAfterCrash kills a pack's harvest after it has
// handed three of its six jobs their lines, and one job's own harvest
// right after its ledger write: a new process, once the dead poller's
// lease has run out, reads back the copies the first split stored (never
// Azure's files again), delivers to the other jobs,
// and every job ends with its own results and exactly one ledger row
// with its usage.
func TestPack_HarvestRepeatedAfterCrash(t *testing.T) {
	t.Parallel()
	e, clock := packEnv(t, envConfig{sim: simConfig(3000)}, 4)
	jobs := e.submitMany(6, 5, func(k int) string { return []string{"t00", "t01", "t02", "t03"}[k%4] })
	clock.Advance(11 * time.Minute)
	e.tick()
	pk := e.packOf(e.reread(jobs)[0])
	poll.Until(t, 20*time.Second, "the pack's batch finished", func() bool {
		b, err := e.azure.GetBatch(context.Background(), pk.Parts[0].BatchID)
		return err == nil && b.FilesReady()
	})

	ctx, crash := context.WithCancel(e.ctx())
	cj := &crashingJobs{JobStore: e.jobs, crash: crash}
	cj.after.Store(3)
	o := e.opts
	o.Jobs, o.Concurrency = cj, 1 // one delivery at a time: the crash falls between two
	dying, err := batch.New(o)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = dying.Poll(ctx)
	crash()
	downloads := e.sim.Stats().Routes[aoaisim.RouteFilesContent]
	delivered := 0
	for _, j := range e.reread(jobs) {
		if j.Parts[0].Status == batch.PartDone {
			delivered++
		}
	}
	if pk = e.packOf(e.reread(jobs)[0]); pk.State == batch.Harvested || delivered != 3 {
		t.Fatalf("after the crash: pack %s, %d jobs delivered; want the pack unharvested, 3 delivered", pk.State, delivered)
	}

	clock.Advance(4 * time.Second) // the dead poller's lease runs out
	e.ledger.failAfterWrite.Store(1)
	e.svc = e.service()
	e.drain(60 * time.Second)
	writes := 0
	for _, j := range e.reread(jobs) {
		e.check(j, map[batch.Outcome]int{batch.OK: 5})
		writes += e.ledger.records[batch.LedgerUnit(j.ID, 0)]
		entries, err := e.ledger.Month(context.Background(), j.Tenant, j.Month())
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for _, en := range entries {
			if en.Unit == batch.LedgerUnit(j.ID, 0) {
				rows++
			}
		}
		if rows != 1 {
			t.Errorf("job %s has %d ledger rows, want 1", j.ID, rows)
		}
	}
	if got := e.sim.Stats().Routes[aoaisim.RouteFilesContent]; got != downloads || downloads == 0 {
		t.Errorf("Azure's files were read %d times before the crash and %d after: the repeated harvest must read the stored copies", downloads, got-downloads)
	}
	if writes != len(jobs)+1 {
		t.Errorf("%d ledger writes, want one per job and the crashed one's again", writes)
	}
}
