package batch_test

import (
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
)

// TestLifecycle_CompletedWithRefusals: a job of 20 items, two of which the
// content filter refuses (one prompt, one completion), is submitted,
// admitted, polled, harvested; every item has one result, usage is in the
// ledger, and the Azure files are gone.
func TestLifecycle_CompletedWithRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(3000)})
	in := items(20, "tkt")
	in[3].Prompt = "Please SIM_FILTER_PROMPT this."
	in[7].Prompt = "Please SIM_FILTER_COMPLETION that."
	j := e.submit("contoso", in)
	if j.State != batch.Accepted || len(j.Parts) != 1 || j.Items != 20 {
		t.Fatalf("submitted job = %s, %d parts, %d items; want accepted, 1, 20", j.State, len(j.Parts), j.Items)
	}
	got := e.pollUntil(30*time.Second, harvested, j.ID)[j.ID]
	if got.Final != batch.Completed {
		t.Errorf("final = %s, want completed", got.Final)
	}
	res := e.check(got, map[batch.Outcome]int{batch.OK: 18, batch.Refused: 2})
	for _, l := range res {
		switch l.ItemID {
		case "tkt-003":
			if l.Outcome != batch.Refused || l.RefusedBy != "prompt" {
				t.Errorf("tkt-003 = %s by %q, want refused by prompt", l.Outcome, l.RefusedBy)
			}
		case "tkt-007":
			if l.Outcome != batch.Refused || l.RefusedBy != "completion" || l.Usage == nil {
				t.Errorf("tkt-007 = %s by %q usage %v, want refused by completion with usage", l.Outcome, l.RefusedBy, l.Usage)
			}
		default:
			if l.Outcome != batch.OK || l.Answer == "" || l.Usage == nil || l.Usage.PromptTokens == 0 {
				t.Errorf("%s = %+v, want ok with an answer and usage", l.ItemID, l)
			}
		}
	}
	if u := got.Usage(); u.Requests != 20 || u.Refusals != 2 {
		t.Errorf("usage requests %d refusals %d, want 20 and 2", u.Requests, u.Refusals)
	}
	if n := e.azureFiles(); n != 0 {
		t.Errorf("%d Azure files left after the harvest, want 0", n)
	}
	p := got.Parts[0]
	if p.Mismatch != "" || len(p.Copies) == 0 || p.Copies[0].SHA256 == "" {
		t.Errorf("part: mismatch %q, copies %+v", p.Mismatch, p.Copies)
	}
	if names := e.alerts.Names(); len(names) != 0 {
		t.Errorf("alerts %v, want none", names)
	}
	// More ticks change nothing: the ledger row is written once.
	before := e.ledger.records[batch.LedgerUnit(j.ID, 0)]
	for range 3 {
		if _, err := e.svc.Poll(e.ctx()); err != nil {
			t.Fatal(err)
		}
	}
	if after := e.ledger.records[batch.LedgerUnit(j.ID, 0)]; before != 1 || after != 1 {
		t.Errorf("ledger writes for the part: %d, then %d after more polls; want 1", before, after)
	}
}

// TestLifecycle_Parts: a job larger than one file's line limit is split
// into parts, one Azure batch each, harvested into one results stream.
func TestLifecycle_Parts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(3000), tweak: func(o *batch.Options) { o.PartLimits.MaxLines = 10 }})
	j := e.submit("contoso", items(25, "p"))
	if len(j.Parts) != 3 {
		t.Fatalf("%d parts, want 3", len(j.Parts))
	}
	got := e.pollUntil(30*time.Second, harvested, j.ID)[j.ID]
	e.check(got, map[batch.Outcome]int{batch.OK: 25})
	ids := map[string]bool{}
	for _, p := range got.Parts {
		if p.BatchID == "" || ids[p.BatchID] {
			t.Errorf("part %d batch id %q: want a distinct batch per part", p.Index, p.BatchID)
		}
		ids[p.BatchID] = true
	}
	if n := len(e.sim.State().Batches); n != 3 {
		t.Errorf("simulator has %d batches, want 3", n)
	}
}

var _ = aoaisim.TypeGlobalBatch
