package batch_test

import (
	"slices"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
)

// TestAdmission_FairAcrossTenants: the deployment's quota takes one job at
// a time. contoso submits three jobs, then fabrikam one: fabrikam's job is
// admitted second, not fourth; jobs wait in held (offpath's own quota
// accounting: Azure never refuses); all end harvested.
func TestAdmission_FairAcrossTenants(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(3000), tweak: func(o *batch.Options) {
		o.Quota = map[string]int64{batchDep: 1000} // one 12-item part (≈850 tokens) at a time
	}})
	var ids []string
	for range 3 {
		ids = append(ids, e.submit("contoso", items(12, "a")).ID)
	}
	ids = append(ids, e.submit("fabrikam", items(12, "b")).ID)
	if _, err := e.svc.Poll(e.ctx()); err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, id := range ids {
		if j := e.get(id); j.State == batch.Held && j.Parts[0].HeldReason == "quota" {
			held++
		}
	}
	if held != 3 {
		t.Errorf("%d jobs held after the first tick, want 3", held)
	}
	got := e.pollUntil(45*time.Second, harvested, ids...)
	order := slices.Clone(ids)
	slices.SortFunc(order, func(a, b string) int { return got[a].Parts[0].SubmittedAt.Compare(got[b].Parts[0].SubmittedAt) })
	want := []string{ids[0], ids[3], ids[1], ids[2]}
	if !slices.Equal(order, want) {
		t.Errorf("admission order %v, want %v (contoso, fabrikam, contoso, contoso)", order, want)
	}
	for _, id := range ids {
		e.check(got[id], map[batch.Outcome]int{batch.OK: 12})
		if r := got[id].Parts[0].Refusals; r != 0 {
			t.Errorf("job %s refused %d times by Azure; offpath's accounting should have held it", id, r)
		}
	}
}

// TestAdmission_FlakyAzure: uploads and creates fail or reset half the
// time; every job still ends harvested with exactly one Azure batch per
// part (a create whose outcome is unknown is looked up by its metadata
// before it is sent again), and polls that fail, read from the batch list
// or with a GET, leave jobs as they were.
func TestAdmission_FlakyAzure(t *testing.T) {
	t.Parallel()
	cfg := simConfig(3000)
	cfg.Faults = []aoaisim.FaultRule{
		{Route: aoaisim.RouteBatchesCreate, ErrorRate: 0.3, ResetRate: 0.2},
		{Route: aoaisim.RouteFilesCreate, ErrorRate: 0.3},
		{Route: aoaisim.RouteBatchesGet, ErrorRate: 0.3},
		{Route: aoaisim.RouteBatchesList, ErrorRate: 0.3},
	}
	e := newEnv(t, envConfig{sim: cfg})
	var ids []string
	for k := range 4 {
		ids = append(ids, e.submit([]string{"contoso", "fabrikam"}[k%2], items(6, "f")).ID)
	}
	got := e.pollUntil(60*time.Second, harvested, ids...)
	for _, id := range ids {
		e.check(got[id], map[batch.Outcome]int{batch.OK: 6})
	}
	perJob := map[string]int{}
	for _, b := range e.sim.State().Batches {
		perJob[b.Metadata[batch.MetaJob]]++
	}
	for _, id := range ids {
		if perJob[id] != 1 {
			t.Errorf("job %s has %d Azure batches, want 1", id, perJob[id])
		}
	}
}
