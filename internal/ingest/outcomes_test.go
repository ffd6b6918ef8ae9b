package ingest_test

import (
	"sync"
	"testing"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/outcome"
)

// countedOutcomes records Settled calls.
type countedOutcomes struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *countedOutcomes) Settled(tenant string, k outcome.Kind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[tenant+" "+k.String()]++
}

func (c *countedOutcomes) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key]
}

// TestProcess_CountsOutcomes: every delivery is counted once with the
// outcome it settled with, under its tenant, or unattributed when the claim
// check names none that exists; a redelivery of a finished version is not
// counted again.
func TestProcess_CountsOutcomes(t *testing.T) {
	t.Parallel()
	counts := &countedOutcomes{m: map[string]int{}}
	f := newFixture(t, fixtureOptions{
		ingest: func(o *ingest.Options) { o.Outcomes = counts },
		sim:    func(c *aoaisim.Config) { c.Faults = []aoaisim.FaultRule{{Route: "chat", ErrorRate: 1}} },
	})
	want := map[string]int{}
	step := func(what string, st document.Status, err error, wantKind outcome.Kind, key string) {
		t.Helper()
		if outcome.Of(err) != wantKind {
			t.Fatalf("%s: Process = %+v, %v; want %s", what, st, err, wantKind)
		}
		if key != "" {
			want[key]++
		}
		for k, n := range want {
			if got := counts.get(k); got != n {
				t.Errorf("%s: %q counted %d times, want %d", what, k, got, n)
			}
		}
	}

	doc := f.drop(t, "acme/a.txt", prose(3000))
	st, err := f.deliver(doc.Body, 1)
	step("chat failing", st, err, outcome.Transient, "acme transient")
	if err := f.sim.SetFaults(nil); err != nil {
		t.Fatal(err)
	}
	st, err = f.deliver(doc.Body, 2)
	step("recovered", st, err, outcome.Done, "acme done")
	st, err = f.deliver(doc.Body, 3)
	step("redelivered after done", st, err, outcome.Done, "")

	refused := f.drop(t, "other/r.md", append(prose(3000), []byte("\n\n"+aoaisim.DefaultPromptTrigger+"\n")...))
	st, err = f.deliver(refused.Body, 1)
	step("summary refused", st, err, outcome.Refused, "other refused")

	stale := f.drop(t, "acme/changed.txt", prose(500))
	f.drop(t, "acme/changed.txt", prose(600))
	st, err = f.deliver(stale.Body, 1)
	step("changed since enqueued", st, err, outcome.Rejected, "acme rejected")

	st, err = f.deliver([]byte("{not a claim check"), 1)
	step("undecodable", st, err, outcome.Rejected, document.Unattributed+" rejected")
}
