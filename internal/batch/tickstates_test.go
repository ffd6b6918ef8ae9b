package batch_test

import (
	"testing"

	"github.com/offpath/offpath/internal/batch"
)

// TestPoll_ReportsJobsByState: the tick's report counts the active jobs it
// read by their state once polled (a job admitted by a tick is counted in its
// new state by the next one): what the batch jobs gauge shows.
func TestPoll_ReportsJobsByState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(3000)})
	a := e.submit("contoso", items(3, "a"))
	b := e.submit("fabrikam", items(2, "b"))
	rep, err := e.svc.Poll(e.ctx())
	if err != nil || rep.States[string(batch.Accepted)] != 2 {
		t.Fatalf("first tick = %+v, %v; want the 2 jobs accepted", rep, err)
	}
	if rep, err = e.svc.Poll(e.ctx()); err != nil {
		t.Fatal(err)
	}
	total := 0
	for state, n := range rep.States {
		if state == "" || n < 1 {
			t.Errorf("states %v: an empty state or count", rep.States)
		}
		total += n
	}
	if total != 2 || rep.Jobs != 2 {
		t.Fatalf("report %+v: want the 2 jobs counted by state", rep)
	}
	for _, j := range []string{a.ID, b.ID} {
		got, err := e.svc.Get(e.ctx(), map[string]string{a.ID: "contoso", b.ID: "fabrikam"}[j], j)
		if err != nil {
			t.Fatal(err)
		}
		if rep.States[string(got.State)] == 0 {
			t.Errorf("job %s is %s, not counted in %v", j, got.State, rep.States)
		}
	}
}
