package batch_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/clocktest"
)

// packTarget is the packs' target size in the tests: small enough that
// 1,000 jobs of 5 items make several packs.
const packTarget = 2000

// packEnv is an env whose service packs small jobs, on a clock the test
// moves, with n tenants t00, t01, ...
func packEnv(t *testing.T, cfg envConfig, n int) (*env, *clocktest.Ahead) {
	t.Helper()
	clock := &clocktest.Ahead{}
	tweak := cfg.tweak
	cfg.tweak = func(o *batch.Options) {
		o.Now = clock.Now
		o.MaxAdmitPerTick = 1000
		o.Pack = batch.PackOptions{MaxItems: 20, Window: 10 * time.Minute, TargetLines: packTarget}
		if tweak != nil {
			tweak(o)
		}
	}
	e := newEnv(t, cfg)
	for k := range n {
		id := fmt.Sprintf("t%02d", k)
		tn := tenant.New(id, id, time.Now())
		tn.Aliases = []string{"summarize"}
		e.tenants[id] = tn
	}
	return e, clock
}

// smallJob is job k's items: each prompt starts with a marker naming the
// job and item, which the simulator's answer repeats (its answers are
// sentences of the prompt), so that an answer given to the wrong job or
// item shows.
func smallJob(k, n int) []batch.Item {
	out := make([]batch.Item, n)
	for i := range out {
		out[i] = batch.Item{ID: fmt.Sprintf("item-%d", i),
			Prompt: fmt.Sprintf("J%04dI%d printer on floor %d is on fire again.", k, i, (k+i)%9)}
	}
	return out
}

func marker(k, i int) string { return fmt.Sprintf("J%04dI%d", k, i) }

// submitMany submits jobs[k] = smallJob(k, items) for tenant tenantOf(k),
// a few at once.
func (e *env) submitMany(n, items int, tenantOf func(k int) string, mod ...func(r *batch.Request)) []batch.Job {
	e.t.Helper()
	jobs := make([]batch.Job, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for k := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			r := batch.Request{Alias: "summarize", SystemPrompt: "Summarise the ticket.", MaxTokens: 32, Items: smallJob(k, items)}
			for _, m := range mod {
				m(&r)
			}
			j, _, err := e.svc.Submit(e.ctx(), e.tenants[tenantOf(k)], r)
			if err != nil {
				e.t.Errorf("Submit %d: %v", k, err)
				return
			}
			jobs[k] = j
		}()
	}
	wg.Wait()
	if e.t.Failed() {
		e.t.FailNow()
	}
	return jobs
}

// drain runs poll ticks until the poller has no active job left, for up
// to timeout (its requests too: not the env's usual two minutes).
func (e *env) drain(timeout time.Duration) {
	e.t.Helper()
	ctx := e.ctxFor(timeout + 30*time.Second)
	deadline := time.Now().Add(timeout)
	for {
		if _, err := e.svc.Poll(ctx); err != nil {
			e.t.Fatalf("Poll: %v", err)
		}
		refs, err := e.jobs.ListActive(ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(refs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d jobs still active after %v", len(refs), timeout)
		}
	}
}

// reread reads jobs again from the store.
func (e *env) reread(jobs []batch.Job) []batch.Job {
	e.t.Helper()
	out := make([]batch.Job, len(jobs))
	for k, j := range jobs {
		got, err := e.jobs.Get(context.Background(), j.Tenant, j.ID)
		if err != nil {
			e.t.Fatal(err)
		}
		out[k] = got
	}
	return out
}

// TestPack_ThousandSmallJobs packs 1,000 jobs of 5 items from 20 tenants
// into a few Azure batches (two full packs at once, the rest when the
// window ends) and checks every job as if it had run alone: each of its
// items answered from its own prompt with the simulator's usage for it,
// its counts, results and ledger row its own (one per job). A sample of
// the same jobs run unpacked gives the same results and usage. The packed
// jobs' rows and ledger are in memory (memstore, which its contract suite
// holds to tablestore's behaviour), their blobs on Azurite: some 14,000
// table operations would make this the slowest test of the suite, and
// the packs of a few jobs in the other pack tests, and the unpacked
// sample here, run on Azurite throughout. Its blobs, a few KB each, are
// written in 64 KiB blocks rather than the handler's 1 MiB.
func TestPack_ThousandSmallJobs(t *testing.T) {
	t.Parallel()
	const nJobs, nItems, nTenants = 1000, 5, 20
	e, clock := packEnv(t, envConfig{sim: simConfig(3000), memTables: true, blockSize: 64 << 10}, nTenants)
	tenantOf := func(k int) string { return fmt.Sprintf("t%02d", k%nTenants) }
	start := time.Now()
	jobs := e.submitMany(nJobs, nItems, tenantOf)
	submitted := time.Since(start)

	// The first tick closes the full packs; the rest waits for its window.
	if _, err := e.svc.Poll(e.ctx()); err != nil {
		t.Fatal(err)
	}
	full := nJobs * nItems / packTarget
	if n := len(e.sim.State().Batches); n != full {
		t.Fatalf("%d Azure batches after the first tick, want %d full packs", n, full)
	}
	clock.Advance(11 * time.Minute)
	// On a machine loaded by other work the harvests have taken over a
	// minute: the wait is for them to end, the bound only against a hang.
	e.drain(3 * time.Minute)
	took := time.Since(start)

	want := (nJobs*nItems + packTarget - 1) / packTarget
	st := e.sim.State()
	if len(st.Batches) != want {
		t.Errorf("%d Azure batches for %d jobs, want %d", len(st.Batches), nJobs, want)
	}
	lines := 0
	for _, b := range st.Batches {
		lines += b.Total
		if b.Metadata["tenant"] != batch.PackTenant {
			t.Errorf("batch %s has tenant %q in its metadata, want the packs'", b.ID, b.Metadata["tenant"])
		}
	}
	if lines != nJobs*nItems {
		t.Errorf("the batches have %d lines, want %d", lines, nJobs*nItems)
	}
	jobs = e.reread(jobs)
	for k, j := range jobs {
		res := e.check(j, map[batch.Outcome]int{batch.OK: nItems})
		if j.Parts[0].Pack == "" {
			t.Errorf("job %d was not packed", k)
		}
		for _, l := range res {
			var i int
			if _, err := fmt.Sscanf(l.ItemID, "item-%d", &i); err != nil {
				t.Fatalf("item id %q", l.ItemID)
			}
			if !strings.Contains(l.Answer, marker(k, i)) {
				t.Errorf("job %d item %d: answer %q is not from its prompt", k, i, l.Answer)
			}
			prompt := smallJob(k, nItems)[i].Prompt
			if wantP := int64(aoaisim.PromptTokens([]string{"Summarise the ticket.", prompt}, 0)); l.Usage == nil || l.Usage.PromptTokens != wantP {
				t.Errorf("job %d item %d: usage %+v, want %d prompt tokens", k, i, l.Usage, wantP)
			}
		}
		if n := e.ledger.records[batch.LedgerUnit(j.ID, 0)]; n != 1 {
			t.Errorf("job %d: %d ledger writes, want 1", k, n)
		}
	}
	packedCalls := callsOf(st.Stats)

	// The same jobs, a sample from every tenant, run unpacked.
	const sample = 20
	alone, _ := packEnv(t, envConfig{sim: simConfig(3000), tweak: func(o *batch.Options) { o.Pack = batch.PackOptions{} }}, nTenants)
	ref := alone.submitMany(sample, nItems, tenantOf)
	alone.drain(60 * time.Second)
	ref = alone.reread(ref)
	if n := len(alone.sim.State().Batches); n != sample {
		t.Errorf("%d Azure batches for %d jobs unpacked, want one each", n, sample)
	}
	for k, r := range ref {
		got, want := byItem(e.results(jobs[k])), byItem(alone.results(r))
		if len(got) != len(want) || len(got) != nItems {
			t.Fatalf("job %d: %d results packed, %d alone", k, len(got), len(want))
		}
		for id, g := range got {
			if w := want[id]; g.Outcome != w.Outcome || g.Answer != w.Answer || g.Usage == nil || w.Usage == nil || *g.Usage != *w.Usage {
				t.Errorf("job %d item %s: packed %+v, alone %+v", k, id, g, w)
			}
		}
		if jobs[k].Usage() != r.Usage() || jobs[k].Counts() != r.Counts() || jobs[k].Final != r.Final {
			t.Errorf("job %d: packed usage %+v counts %+v %s, alone %+v %+v %s", k, jobs[k].Usage(), jobs[k].Counts(), jobs[k].Final,
				r.Usage(), r.Counts(), r.Final)
		}
	}
	aloneCalls := callsOf(alone.sim.State().Stats)
	t.Logf("%d jobs of %d items from %d tenants: %d Azure batches packed (%d unpacked: one per job); "+
		"%d Azure calls packed (%.3f per job), %.2f per job unpacked (%d calls for a %d-job sample); submitted in %v, all harvested in %v",
		nJobs, nItems, nTenants, len(st.Batches), nJobs, packedCalls, float64(packedCalls)/nJobs, float64(aloneCalls)/sample, aloneCalls, sample,
		submitted.Round(time.Millisecond), took.Round(time.Millisecond))
}

func byItem(res []batch.ResultLine) map[string]batch.ResultLine {
	out := map[string]batch.ResultLine{}
	for _, l := range res {
		out[l.ItemID] = l
	}
	return out
}

// callsOf counts the requests the simulator served.
func callsOf(st aoaisim.Stats) int64 {
	var n int64
	for _, c := range st.Routes {
		n += c
	}
	return n
}
