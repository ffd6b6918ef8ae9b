package batch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/clocktest"
)

// Two Global Batch deployments of one model: cheap (a Global Batch
// deployment) and dear (a Data Zone Batch deployment in the EU, dearer).
const (
	cheapDep = "mini-batch-global"
	dearDep  = "mini-batch-eu"
)

func twoDeployments(quotaCheap int64) (string, aoaisim.Config) {
	price := func(in, out string) string {
		return `"price":{"input_per_1m":` + in + `,"cached_input_per_1m":0,"output_per_1m":` + out + `}`
	}
	models := `{"version":1,"aliases":{"summarize":{
		"queue":{"deployment":"gpt-4o-mini",` + price("0.15", "0.6") + `},
		"batch":[{"deployment":"` + dearDep + `",` + price("0.0825", "0.33") + `,"data_zone":"eu"},
		         {"deployment":"` + cheapDep + `",` + price("0.075", "0.3") + `}]}}}`
	deps := []aoaisim.Deployment{
		{Name: cheapDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeGlobalBatch, EnqueuedTokenQuota: quotaCheap},
		{Name: dearDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeGlobalBatch},
	}
	return models, simConfig(600, deps...)
}

// simDeployments maps each Azure batch the simulator holds to the
// deployment it runs on.
func (e *env) simDeployments() map[string]string {
	out := map[string]string{}
	for _, b := range e.sim.State().Batches {
		out[b.ID] = b.Deployment
	}
	return out
}

// checkLedgerPerPart checks that every part's ledger row names the
// deployment its Azure batch really ran on, priced at that deployment's
// price.
func (e *env) checkLedgerPerPart(j batch.Job) map[string]int {
	e.t.Helper()
	entries, err := e.ledger.Month(context.Background(), j.Tenant, j.Month())
	if err != nil {
		e.t.Fatal(err)
	}
	byUnit := map[string]ledger.Entry{}
	for _, en := range entries {
		byUnit[en.Unit] = en
	}
	ran := e.simDeployments()
	perDep := map[string]int{}
	for _, p := range j.Parts {
		en, ok := byUnit[batch.LedgerUnit(j.ID, p.Index)]
		if !ok {
			e.t.Errorf("part %d: no ledger row", p.Index)
			continue
		}
		if en.Deployment != p.Deployment || ran[p.BatchID] != p.Deployment {
			e.t.Errorf("part %d: ledger names %s, the part %s, Azure ran it on %s", p.Index, en.Deployment, p.Deployment, ran[p.BatchID])
		}
		price, err := e.catalog.Price(j.Alias, catalog.Batch, en.Deployment)
		if err != nil {
			e.t.Fatal(err)
		}
		if want := price.Cost(en.PromptTokens, en.CachedTokens, en.CompletionTokens); en.Cost != want || want == 0 {
			e.t.Errorf("part %d on %s: cost %s, want %s at its price", p.Index, en.Deployment, en.Cost.Dollars(), want.Dollars())
		}
		perDep[en.Deployment]++
	}
	return perDep
}

// Parts go to the cheaper deployment until its quota is full, then to the
// dearer one, in the same tick; each part's ledger row names the
// deployment that ran it, at its price.
func TestSchedule_CheaperUntilFullThenNext(t *testing.T) {
	t.Parallel()
	models, sim := twoDeployments(0)
	e := newEnv(t, envConfig{models: models, sim: sim, tweak: func(o *batch.Options) {
		o.PartLimits = batchfile.Limits{MaxLines: 10}
	}})
	j := e.submit("contoso", items(50, "t"))
	if len(j.Parts) != 5 {
		t.Fatalf("%d parts, want 5", len(j.Parts))
	}
	for _, p := range j.Parts {
		if p.Deployment != cheapDep {
			t.Fatalf("part %d written for %s, want the cheapest, %s", p.Index, p.Deployment, cheapDep)
		}
	}
	// Room on the cheap deployment for two parts and a half.
	e.opts.Quota = map[string]int64{cheapDep: j.Parts[0].EstimatedTokens*2 + j.Parts[0].EstimatedTokens/2}
	e.svc = e.service()
	if _, err := e.svc.Poll(e.ctx()); err != nil {
		t.Fatal(err)
	}
	j = e.get(j.ID)
	got := map[string][]string{}
	for _, p := range j.Parts {
		if p.Status != batch.PartSubmitted && p.Status != batch.PartDone {
			t.Fatalf("part %d is %s after one tick, want submitted", p.Index, p.Status)
		}
		got[p.Deployment] = append(got[p.Deployment], p.Placement)
		if p.Deployment == dearDep && (p.Placement != batch.PlaceCheaperFull || !strings.Contains(p.PlacementDetail, cheapDep+" had no headroom")) {
			t.Errorf("part %d on %s: placement %q (%s)", p.Index, p.Deployment, p.Placement, p.PlacementDetail)
		}
	}
	if strings.Join(got[cheapDep], ",") != "cheapest,cheapest" || len(got[dearDep]) != 3 {
		t.Fatalf("placements %v, want two on %s (cheapest) and three on %s", got, cheapDep, dearDep)
	}
	j = e.pollUntil(time.Minute, harvested, j.ID)[j.ID]
	res := e.results(j)
	if len(res) != 50 {
		t.Errorf("%d results, want 50", len(res))
	}
	if per := e.checkLedgerPerPart(j); per[cheapDep] != 2 || per[dearDep] != 3 {
		t.Errorf("ledger rows per deployment %v", per)
	}
	// The moved parts' inputs were uploaded again, named for dear; the
	// first uploads were never made (the parts moved before any).
	for _, f := range e.sim.State().Files {
		if strings.Contains(f.Filename, ".part") && !strings.HasSuffix(f.Filename, "."+dearDep+".jsonl") && strings.Count(f.Filename, ".") > 2 {
			t.Errorf("unexpected input file %s", f.Filename)
		}
	}
}

// A deployment that answers token_limit_exceeded is skipped for the
// cool-off by parts that have another, and tried again once it is over.
func TestSchedule_CoolOffAfterTokenLimit(t *testing.T) {
	t.Parallel()
	models, sim := twoDeployments(10) // far too little for any part: Azure refuses at create
	clock := &clocktest.Ahead{}
	e := newEnv(t, envConfig{models: models, sim: sim, tweak: func(o *batch.Options) {
		o.Now, o.CoolOff = clock.Now, 10*time.Minute
	}})
	creates := func() int64 { return e.sim.Stats().Routes[aoaisim.RouteBatchesCreate] }

	a := e.submit("contoso", items(5, "a"))
	if _, err := e.svc.Poll(e.ctx()); err != nil {
		t.Fatal(err)
	}
	p := e.get(a.ID).Parts[0]
	if p.Deployment != dearDep || p.Status != batch.PartSubmitted || p.Placement != batch.PlaceCheaperFull ||
		!strings.Contains(p.PlacementDetail, cheapDep+" answered token_limit_exceeded") {
		t.Fatalf("refused part: %s on %s, placement %q (%s)", p.Status, p.Deployment, p.Placement, p.PlacementDetail)
	}
	if n := creates(); n != 2 {
		t.Errorf("%d creates, want 2 (refused on %s, then %s)", n, cheapDep, dearDep)
	}

	// Cooling off: the next job goes straight to dear, no create on cheap.
	b := e.submit("contoso", items(5, "b"))
	before := creates()
	if _, err := e.svc.Poll(e.ctx()); err != nil {
		t.Fatal(err)
	}
	p = e.get(b.ID).Parts[0]
	if p.Deployment != dearDep || p.Placement != batch.PlaceCheaperCoolingOff || !strings.Contains(p.PlacementDetail, "cooling off until") {
		t.Fatalf("part during the cool-off: on %s, placement %q (%s)", p.Deployment, p.Placement, p.PlacementDetail)
	}
	if n := creates() - before; n != 1 {
		t.Errorf("%d creates during the cool-off, want 1 (on %s only)", n, dearDep)
	}

	// After the cool-off, cheap is tried again (and refuses again).
	clock.Advance(11 * time.Minute)
	c := e.submit("contoso", items(5, "c"))
	before = creates()
	if _, err := e.svc.Poll(e.ctx()); err != nil {
		t.Fatal(err)
	}
	p = e.get(c.ID).Parts[0]
	if p.Deployment != dearDep || p.Placement != batch.PlaceCheaperFull || creates()-before != 2 {
		t.Fatalf("after the cool-off: on %s, placement %q (%s), %d creates", p.Deployment, p.Placement, p.PlacementDetail, creates()-before)
	}
}

// A deployment whose creates keep failing with 5xx is cooled off after
// CoolOffFailures failures: its part moves to the other deployment; once
// the cool-off is over and the deployment healthy, parts go to it again.
func TestSchedule_CoolOffAfterErrors(t *testing.T) {
	t.Parallel()
	models, sim := twoDeployments(0)
	sim.Faults = []aoaisim.FaultRule{{Deployment: cheapDep, Route: aoaisim.RouteBatchesCreate, ErrorRate: 1, ErrorStatus: 500}}
	clock := &clocktest.Ahead{}
	e := newEnv(t, envConfig{models: models, sim: sim, tweak: func(o *batch.Options) {
		o.Now, o.CoolOff, o.CoolOffFailures = clock.Now, 10*time.Minute, 2
	}})
	a := e.submit("contoso", items(5, "a"))
	for try := 1; try <= 2; try++ {
		if _, err := e.svc.Poll(e.ctx()); err != nil {
			t.Fatal(err)
		}
		p := e.get(a.ID).Parts[0]
		if p.Status != batch.PartPending || p.Deployment != cheapDep || p.HeldReason != "retry" {
			t.Fatalf("try %d: part %s on %s (%s), want pending on %s for retry", try, p.Status, p.Deployment, p.HeldReason, cheapDep)
		}
		clock.Advance(time.Second) // past the part's backoff
	}
	if _, err := e.svc.Poll(e.ctx()); err != nil {
		t.Fatal(err)
	}
	p := e.get(a.ID).Parts[0]
	if p.Status != batch.PartSubmitted || p.Deployment != dearDep || p.Placement != batch.PlaceCheaperCoolingOff ||
		!strings.Contains(p.PlacementDetail, "after errors") {
		t.Fatalf("after two failures: part %s on %s, placement %q (%s)", p.Status, p.Deployment, p.Placement, p.PlacementDetail)
	}
	a2 := e.pollUntil(time.Minute, harvested, a.ID)[a.ID]
	if per := e.checkLedgerPerPart(a2); per[dearDep] != 1 {
		t.Errorf("ledger rows per deployment %v", per)
	}
	// Healthy again, and the cool-off over: the cheapest is used.
	if err := e.sim.SetFaults(nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(11 * time.Minute)
	b := e.submit("contoso", items(5, "b"))
	if _, err := e.svc.Poll(e.ctx()); err != nil {
		t.Fatal(err)
	}
	if p := e.get(b.ID).Parts[0]; p.Deployment != cheapDep || p.Placement != batch.PlaceCheapest || p.Status != batch.PartSubmitted {
		t.Fatalf("after the cool-off: part %s on %s, placement %q", p.Status, p.Deployment, p.Placement)
	}
}

// A tenant that requires the EU data zone is never sent to the cheaper
// global deployment; one whose zone has no deployment is refused.
func TestSchedule_DataZoneExcludesCheaper(t *testing.T) {
	t.Parallel()
	models, sim := twoDeployments(0)
	e := newEnv(t, envConfig{models: models, sim: sim})
	fab := e.tenants["fabrikam"]
	fab.DataZone = "eu"
	e.tenants["fabrikam"] = fab
	j := e.submit("fabrikam", items(20, "z"))
	if j.DataZone != "eu" || j.Parts[0].Deployment != dearDep {
		t.Fatalf("job in zone %q written for %s, want %s", j.DataZone, j.Parts[0].Deployment, dearDep)
	}
	j = e.pollUntil(time.Minute, harvested, j.ID)[j.ID]
	if p := j.Parts[0]; p.Deployment != dearDep || p.Placement != batch.PlaceCheapest {
		t.Errorf("part on %s, placement %q", p.Deployment, p.Placement)
	}
	if per := e.checkLedgerPerPart(j); per[dearDep] != 1 || per[cheapDep] != 0 {
		t.Errorf("ledger rows per deployment %v", per)
	}
	us := e.tenants["contoso"]
	us.DataZone = "us"
	_, _, err := e.svc.Submit(e.ctx(), us, batch.Request{Alias: "summarize", Items: items(1, "u")})
	if err == nil || !strings.Contains(err.Error(), `no batch deployment in data zone "us"`) {
		t.Errorf("Submit in a zone without deployments: %v", err)
	}
}
