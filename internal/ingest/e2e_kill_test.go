package ingest_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/poll"
)

// TestE2E_KillsMeterEveryAttempt: 200 documents, and the handler killed
// with SIGKILL six times while many are in flight (some embedded and
// waiting for their summary, some between calls). Every delivery meters
// each model call as it returns, so the ledger's tokens per deployment are
// exactly what the simulator served, abandoned attempts included, and
// every document ends done once, with one finished attempt in the ledger.
//
// A kill is taken where the ledger can be exact: the model is frozen (new
// calls hang, unanswered and unbilled, as calls that never reached it), the
// calls it was answering have been answered, and the ledger has caught up
// with what was served; then the handler dies mid-document, and the model
// thaws once the dead handler's hanging calls are gone.
func TestE2E_KillsMeterEveryAttempt(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("200 documents through the dev host")
	}
	const docs, kills = 200, 6
	// A dead handler's messages come back soon; a long timeout keeps every
	// call within its invocation's budget, so none is cut off after Azure
	// answered it (spend only the reconciliation could find).
	s := newStack(t, stackOptions{lockDuration: 2 * time.Second, functionTimeout: "00:05:00"})
	etags := map[string]string{}
	for i := range docs {
		name := fmt.Sprintf("acme/chaos/doc-%03d.txt", i)
		etags[name] = s.mustUpload(name, prose(2000+40*i))
	}
	answered := func() int64 {
		var n int64
		for _, d := range s.sim.Stats().Deployments {
			n += d.Requests
		}
		return n
	}
	// Before the first kill, unfinished rows at a freeze are an attempt in
	// progress that has spent: the first kill waits for one, so that it
	// abandons a document mid-way (a freeze can find every document in
	// flight still before its first call).
	hit := false
	for k := range kills {
		next := answered() + 25
		poll.Until(t, 60*time.Second, fmt.Sprintf("work before kill %d", k+1), func() bool { return answered() >= next })
		for {
			if err := s.sim.SetFaults([]aoaisim.FaultRule{{Route: "embeddings", HangRate: 1}, {Route: "chat", HangRate: 1}}); err != nil {
				t.Fatal(err)
			}
			if !poll.Within(30*time.Second, func() bool { return s.sim.Stats().InFlight == 0 && s.meteredEqualsServed() }) {
				served, metered, _ := s.servedAndMetered()
				t.Fatalf("kill %d: not every answered call is metered: %d in flight, served %v, ledger %v", k+1, s.sim.Stats().InFlight, served, metered)
			}
			if _, _, unfinished := s.servedAndMetered(); hit || unfinished > 0 {
				hit = true
				break
			}
			if err := s.sim.SetFaults(nil); err != nil {
				t.Fatal(err)
			}
			more := answered() + 1
			poll.Until(t, 60*time.Second, "an attempt that has spent tokens", func() bool { return answered() >= more })
		}
		s.killHandler()
		// The dead handler's requests still on their way must meet the
		// freeze too (a request answered for a dead client is billed and
		// unmeterable): thaw only once the simulator has none left.
		poll.Until(t, 30*time.Second, "the dead handler's requests gone", func() bool { return s.sim.Stats().Open == 0 })
		if err := s.sim.SetFaults(nil); err != nil {
			t.Fatal(err)
		}
	}
	for name, etag := range etags {
		if st := s.final("acme", name, etag, 3*time.Minute); st.State != document.Done {
			t.Errorf("%s: %s (%s), want done", name, st.State, st.Reason)
		}
	}
	served, metered, abandoned := s.servedAndMetered()
	for dep, want := range served {
		if metered[dep] != want {
			t.Errorf("%s: ledger %v tokens, simulator served %v", dep, metered[dep], want)
		}
	}
	rows, err := s.ledger.Month(context.Background(), "acme", ledger.MonthOf(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	finished := map[string]map[string]bool{} // document version → deliveries with finished rows
	for _, e := range rows {
		version, delivery, _ := strings.Cut(e.Unit, "#")
		if !e.Unfinished {
			if finished[version] == nil {
				finished[version] = map[string]bool{}
			}
			finished[version][delivery] = true
		}
	}
	// The attempt that saved the document's status finished its rows. An
	// earlier delivery may have finished its rows too, if the kill fell
	// after its meter and before its status: its calls were answered and
	// billed, and the redelivery did the work again. A later one may not.
	for name, etag := range etags {
		st, err := s.docs.Get(context.Background(), "acme", name)
		if err != nil {
			t.Fatal(err)
		}
		d := finished["ingest:"+name+"@"+etag]
		saved := 0
		for key := range d {
			n, _, _ := strings.Cut(key, "~")
			switch delivery, _ := strconv.Atoi(n); {
			case delivery == st.Deliveries:
				saved++
			case delivery > st.Deliveries:
				t.Errorf("%s: delivery %d finished after the one that saved the status (%d)", name, delivery, st.Deliveries)
			}
		}
		if saved != 1 {
			t.Errorf("%s: finished attempts %v; want one of delivery %d, the one that saved the status", name, d, st.Deliveries)
		}
	}
	if abandoned == 0 {
		t.Error("no abandoned attempt in the ledger: the kills hit nothing")
	}
	if d := s.streamMismatch("acme", metered); d != "" {
		t.Errorf("token metrics stream ≠ ledger: %s", d)
	}
	t.Logf("%d documents, %d kills: simulator served %v, ledger %v (of which abandoned attempts %d tokens)",
		docs, kills, served, metered, abandoned)
}

// servedAndMetered returns, per deployment, the prompt and completion
// tokens the simulator served and the ledger holds, and the ledger's tokens
// of unfinished attempts.
func (s *stack) servedAndMetered() (served, metered map[string][2]int64, abandoned int64) {
	s.t.Helper()
	served, metered = map[string][2]int64{}, map[string][2]int64{}
	for _, d := range s.sim.Stats().Deployments {
		if d.PromptTokens+d.CompletionTokens > 0 {
			served[d.Name] = [2]int64{d.PromptTokens, d.CompletionTokens}
		}
	}
	rows, err := s.ledger.Month(context.Background(), "acme", ledger.MonthOf(time.Now()))
	if err != nil {
		s.t.Fatal(err)
	}
	for _, e := range rows {
		m := metered[e.Deployment]
		metered[e.Deployment] = [2]int64{m[0] + e.PromptTokens, m[1] + e.CompletionTokens}
		if e.Unfinished {
			abandoned += e.TotalTokens()
		}
	}
	return served, metered, abandoned
}

// meteredEqualsServed: the ledger holds what the simulator served, and
// the token metrics stream has every change of it.
func (s *stack) meteredEqualsServed() bool {
	served, metered, _ := s.servedAndMetered()
	for dep, want := range served {
		if metered[dep] != want {
			return false
		}
	}
	return s.streamMismatch("acme", metered) == ""
}

// streamMismatch says how the token metrics stream differs from the
// ledger's tokens per deployment, or "" when it sums to them exactly.
func (s *stack) streamMismatch(tenantID string, metered map[string][2]int64) string {
	streamed := s.streamed(tenantID)
	var diffs []string
	for dep, want := range metered {
		if streamed[dep] != want {
			diffs = append(diffs, fmt.Sprintf("%s: stream %v, ledger %v", dep, streamed[dep], want))
		}
	}
	for dep, got := range streamed {
		if _, ok := metered[dep]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: stream %v, not in the ledger", dep, got))
		}
	}
	return strings.Join(diffs, "; ")
}
