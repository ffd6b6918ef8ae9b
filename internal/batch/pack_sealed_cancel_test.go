package batch_test

import (
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
)

// TestPack_CancelSealedButHeld cancels a packed job after its pack was
// sealed and its file uploaded, while Azure's quota holds the pack back
// (its create refused with token_limit_exceeded, nothing created): the
// job leaves the pack as one cancelled before the seal does. Its lines
// are not in the file Azure runs (the pack's file is built and uploaded
// again without them, the earlier upload deleted), it ends cancelled with
// nothing billed, and the others run as packed. Azure's quota is set
// between two and three of the jobs, so the pack fits once it has left.
func TestPack_CancelSealedButHeld(t *testing.T) {
	t.Parallel()
	names := func(k int) string { return []string{"t00", "t01", "t02"}[k] }
	// One small job's input size, measured in an environment of its own:
	// the simulator's quota is fixed when it starts.
	probe, _ := packEnv(t, envConfig{sim: simConfig(3000)}, 3)
	size := probe.submitMany(1, 5, names)[0].Parts[0].Bytes
	quota := aoaisim.EnqueuedTokens(size * 5 / 2)
	e, clock := packEnv(t, envConfig{sim: simConfig(3000, aoaisim.Deployment{Name: batchDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18",
		Type: aoaisim.TypeGlobalBatch, EnqueuedTokenQuota: quota, QuotaBehaviour: aoaisim.QuotaFailFast})}, 3)
	small := e.submitMany(3, 5, names)
	for _, j := range small {
		if b := j.Parts[0].Bytes; b*2 > size*5/2 || b*3 <= size*5/2 {
			t.Fatalf("job %s has %d bytes; the quota fits two jobs of %d bytes, not three", j.ID, b, size)
		}
	}
	clock.Advance(11 * time.Minute)
	e.tick() // packed, sealed, uploaded, refused by Azure's quota
	pk := e.packOf(e.reread(small)[0])
	p := pk.Parts[0]
	if !pk.Pack.Sealed || p.Status != batch.PartPending || p.HeldReason != "token_limit_exceeded" || p.InputFileID == "" || p.MaybeCreated {
		t.Fatalf("pack sealed %v, part %s (%q), file %q, maybe created %v: want sealed, held by Azure's quota, uploaded, nothing created",
			pk.Pack.Sealed, p.Status, p.HeldReason, p.InputFileID, p.MaybeCreated)
	}
	if n := len(e.sim.State().Batches); n != 0 {
		t.Fatalf("%d Azure batches, want none", n)
	}
	uploaded := p.InputFileID

	gone, err := e.svc.Cancel(e.ctx(), small[1].Tenant, small[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if gone.State != batch.Cancelled {
		t.Errorf("cancelled job is %s, want cancelled at once", gone.State)
	}
	pk = e.packOf(e.reread(small)[0])
	if p := pk.Parts[0]; p.InputFileID != "" || p.Lines != 10 || pk.Items != 10 {
		t.Errorf("pack after the cancel: file %q, %d lines, %d items; want no file, the two others' 10 lines", p.InputFileID, p.Lines, pk.Items)
	}
	clock.Advance(10 * time.Minute) // past the backoff
	e.drain(60 * time.Second)

	st := e.sim.State()
	if len(st.Batches) != 1 || st.Batches[0].Metadata["tenant"] != batch.PackTenant || st.Batches[0].Total != 10 {
		t.Fatalf("batches %+v: want the pack's alone, with the two others' 10 lines", st.Batches)
	}
	for _, f := range st.Files {
		if f.ID == uploaded {
			t.Errorf("the pack's first upload, with the cancelled job's lines, is still at Azure: %+v", f)
		}
	}
	small = e.reread(small)
	e.check(small[0], map[batch.Outcome]int{batch.OK: 5})
	e.check(small[2], map[batch.Outcome]int{batch.OK: 5})
	e.check(small[1], map[batch.Outcome]int{batch.CancelledOutcome: 5})
	if u := small[1].Usage(); !u.IsZero() || small[1].Final != batch.Cancelled {
		t.Errorf("the cancelled job ended %s with usage %+v, want cancelled and none", small[1].Final, u)
	}
	if n := e.ledger.records[batch.LedgerUnit(small[1].ID, 0)]; n != 0 {
		t.Errorf("the cancelled job has %d ledger writes, want none", n)
	}
}
