package ingest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/outcome"
)

// heldSummary holds the first summary call until released, then answers it
// or fails it: the first delivery stalls there while a later one runs.
type heldSummary struct {
	ingest.Models
	held    chan struct{} // closed when the first call is waiting
	release chan error    // what the first call returns after the model's answer
	calls   chan struct{} // one token: the first call takes it
}

func newHeldSummary(m ingest.Models) *heldSummary {
	h := &heldSummary{Models: m, held: make(chan struct{}), release: make(chan error, 1), calls: make(chan struct{}, 1)}
	h.calls <- struct{}{}
	return h
}

func (h *heldSummary) Summarize(ctx context.Context, deployment, text string, maxTokens int) (ingest.Summary, error) {
	select {
	case <-h.calls:
	default:
		return h.Models.Summarize(ctx, deployment, text, maxTokens)
	}
	close(h.held)
	fail := <-h.release
	s, err := h.Models.Summarize(ctx, deployment, text, maxTokens)
	if err == nil && fail != nil {
		return s, fail
	}
	return s, err
}

// TestProcess_SupersededDeliveryStandsDown: a delivery that lost its lock
// goes on working while Service Bus hands the message to the next delivery,
// which finishes first. The stale delivery, done later, neither overwrites
// the later one's status (a success, or a failure over a success) nor keeps
// finished rows: exactly the delivery whose status stands has them, and the
// ledger still holds every call the simulator answered.
func TestProcess_SupersededDeliveryStandsDown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		fail error // the stale delivery's summary fails after its answer
	}{
		{"succeeds", nil},
		{"fails", outcome.Retry(errors.New("connection reset"), 0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var held *heldSummary
			counts := &countedOutcomes{m: map[string]int{}}
			f := newFixture(t, fixtureOptions{models: func(m ingest.Models) ingest.Models { held = newHeldSummary(m); return held },
				ingest: func(o *ingest.Options) { o.Outcomes = counts }})
			claim := f.drop(t, "acme/held.txt", prose(3000))
			type result struct {
				st  document.Status
				err error
			}
			first := make(chan result, 1)
			go func() {
				st, err := f.deliver(claim.Body, 1)
				first <- result{st, err}
			}()
			<-held.held
			if st, err := f.deliver(claim.Body, 2); err != nil || st.State != document.Done || st.Deliveries != 2 {
				t.Fatalf("second delivery = %+v, %v; want done", st, err)
			}
			held.release <- c.fail
			r := <-first
			if r.st.Deliveries != 2 || r.st.State != document.Done {
				t.Errorf("the stale delivery returned %s of delivery %d, %v; want the later delivery's done status", r.st.State, r.st.Deliveries, r.err)
			}
			got, err := f.statuses.Get(context.Background(), "acme", "acme/held.txt")
			if err != nil || got.State != document.Done || got.Deliveries != 2 {
				t.Errorf("status = %s of delivery %d, %v; want done by delivery 2", got.State, got.Deliveries, err)
			}
			if n := counts.get("acme done"); n != 1 || len(counts.m) != 1 {
				t.Errorf("outcomes counted %v, want the later delivery's done once", counts.m)
			}
			metered := map[string][2]int64{}
			for _, e := range f.ledger.entries() {
				m := metered[e.Deployment]
				metered[e.Deployment] = [2]int64{m[0] + e.PromptTokens, m[1] + e.CompletionTokens}
				if finishedByFirst := strings.Contains(e.Unit, "#1~") && !e.Unfinished; finishedByFirst {
					t.Errorf("the stale delivery's %s row is finished", e.Deployment)
				}
				if strings.Contains(e.Unit, "#2~") && e.Unfinished {
					t.Errorf("the later delivery's %s row is unfinished", e.Deployment)
				}
			}
			for _, d := range f.sim.Stats().Deployments {
				if want := [2]int64{d.PromptTokens, d.CompletionTokens}; metered[d.Name] != want {
					t.Errorf("%s: ledger %v tokens, simulator served %v", d.Name, metered[d.Name], want)
				}
			}
		})
	}
}

// TestProcess_LateStaleDeliveryDoesNothing: a delivery that starts after a
// later delivery of its message has taken the document stops before any
// model call, writes nothing and is not counted; the later one finishes.
func TestProcess_LateStaleDeliveryDoesNothing(t *testing.T) {
	t.Parallel()
	var held *heldSummary
	counts := &countedOutcomes{m: map[string]int{}}
	f := newFixture(t, fixtureOptions{models: func(m ingest.Models) ingest.Models { held = newHeldSummary(m); return held },
		ingest: func(o *ingest.Options) { o.Outcomes = counts }})
	claim := f.drop(t, "acme/late.txt", prose(3000))
	second := make(chan error, 1)
	go func() {
		_, err := f.deliver(claim.Body, 2)
		second <- err
	}()
	<-held.held // delivery 2 is processing, inside its summary call
	calls := func() (n int64) {
		for _, d := range f.sim.Stats().Deployments {
			n += d.Requests
		}
		return n
	}
	before, rows := calls(), len(f.ledger.entries())
	st, err := f.deliver(claim.Body, 1)
	if err != nil || st.State != document.Processing || st.Deliveries != 2 {
		t.Errorf("the late stale delivery returned %s of delivery %d, %v; want delivery 2's processing status", st.State, st.Deliveries, err)
	}
	if n := calls(); n != before {
		t.Errorf("the late stale delivery made %d model calls", n-before)
	}
	if n := len(f.ledger.entries()); n != rows {
		t.Errorf("the late stale delivery wrote %d ledger rows", n-rows)
	}
	held.release <- nil
	if err := <-second; err != nil {
		t.Fatalf("second delivery: %v", err)
	}
	got, err := f.statuses.Get(context.Background(), "acme", "acme/late.txt")
	if err != nil || got.State != document.Done || got.Deliveries != 2 {
		t.Errorf("status = %s of delivery %d, %v; want done by delivery 2", got.State, got.Deliveries, err)
	}
	if n := counts.get("acme done"); n != 1 || len(counts.m) != 1 {
		t.Errorf("outcomes counted %v, want the later delivery's done once", counts.m)
	}
}
