package batch_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/apptest"
	"github.com/offpath/offpath/internal/testing/poll"
)

// TestEndToEnd_KillDuringFallback kills the handler process (SIGKILL)
// while a part's deadline fallback runs through the synchronous
// deployment, part-way through a group of items; the dev host restarts
// the handler, the next poll (once the dead poller's lease has run out)
// resumes the fallback, and every item is answered once in the results
// and booked once in the ledger, whose tokens are what the simulator
// served.
//
// The batch never leaves validating, and the job has so many lines that
// the deadline rule gives up on it at once: with complete_by an hour and
// a minute ahead, 1000 lines at 60 a minute plus the 15 minutes to cancel
// and 30 to run leave no time to wait (the handler runs on the real
// clock, and complete_by cannot be nearer than an hour: the job has to be
// this long, which makes this test take some 30 s of work). The kill is taken where the ledger
// can be exact (as in ingest's kill test): the model is frozen (new calls
// hang, never answered nor billed), the calls it was answering have been
// answered and their answers kept and booked; then the handler dies with
// its group half-asked, and the model thaws once the dead handler's
// hanging calls are gone.
func TestEndToEnd_KillDuringFallback(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	const items, killAfter = 1000, 200
	validating := aoaisim.FaultRule{Deployment: batchDep, HoldValidating: aoaisim.Duration(48 * time.Hour)}
	sim := simConfig(600,
		aoaisim.Deployment{Name: batchDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeGlobalBatch},
		aoaisim.Deployment{Name: syncDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeStandard})
	sim.Faults = []aoaisim.FaultRule{validating}
	s := apptest.Start(t, apptest.Config{Sim: sim, Settings: map[string]string{"OFFPATH_BATCH_LEASE_TTL": "2s"}})
	// A webhook, so that the fallback's event is recorded (nothing
	// delivers it: the deliver timer does not fire in this test).
	if st := s.DoAdmin(http.MethodPut, "/api/v1/tenants/contoso/webhook", map[string]any{"url": "http://127.0.0.1:9/hooks"}, nil); st != http.StatusOK {
		t.Fatalf("register a webhook: %d", st)
	}
	body := e2eBody("late", items)
	body["complete_by"] = time.Now().Add(batch.MinCompleteBy + time.Minute).UTC().Format(time.RFC3339)
	var j jobJSON
	if st := s.Do(http.MethodPost, "/api/v1/batches", "contoso", body, &j); st != http.StatusAccepted {
		t.Fatalf("submit: %d", st)
	}
	served := func() aoaisim.DeploymentStats {
		for _, d := range s.Sim.Stats().Deployments {
			if d.Name == syncDep {
				return d
			}
		}
		t.Fatalf("the simulator has no %s", syncDep)
		return aoaisim.DeploymentStats{}
	}
	booked := func() (rows int, u ledger.Usage) {
		entries, err := s.Ledger.Month(context.Background(), "contoso", ledger.MonthOf(time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.Contains(e.Unit, "/sync-") {
				rows++
				u.Add(e.Usage)
			}
		}
		return rows, u
	}
	caughtUp := func() bool {
		d := served()
		rows, u := booked()
		return s.Sim.Stats().InFlight == 0 && int64(rows) == d.Requests &&
			u.PromptTokens == d.PromptTokens && u.CompletionTokens == d.CompletionTokens
	}
	start := time.Now()
	poll.Until(t, 90*time.Second, "the fallback under way", func() bool { return served().Requests >= killAfter })
	// Half the calls hang: a group soon waits for some of its calls with
	// the others' answers kept and booked, and Fallback.Done not yet past
	// them. Then every call hangs, and the kill comes.
	if err := s.Sim.SetFaults([]aoaisim.FaultRule{validating, {Route: aoaisim.RouteChat, HangRate: 0.5}}); err != nil {
		t.Fatal(err)
	}
	done := func() int {
		j, err := s.Jobs.Get(context.Background(), "contoso", j.ID)
		if err != nil {
			t.Fatal(err)
		}
		return j.Parts[0].Fallback.Done
	}
	poll.Until(t, 60*time.Second, "a group half answered", func() bool {
		rows, _ := booked()
		return caughtUp() && rows > done()
	})
	if err := s.Sim.SetFaults([]aoaisim.FaultRule{validating, {Route: aoaisim.RouteChat, HangRate: 1}}); err != nil {
		t.Fatal(err)
	}
	if !poll.Within(30*time.Second, caughtUp) {
		rows, u := booked()
		t.Fatalf("not every answered call is booked: %d in flight, served %+v, ledger %d rows %+v", s.Sim.Stats().InFlight, served(), rows, u)
	}
	before, err := s.Jobs.Get(context.Background(), "contoso", j.ID)
	if err != nil {
		t.Fatal(err)
	}
	answered := served().Requests
	if f := before.Parts[0].Fallback; before.Parts[0].Status != batch.PartFallback || f == nil || int64(f.Done) >= answered {
		t.Fatalf("part %s with fallback %+v at the kill, %d items answered: want a fallback under way, answers kept past Done", before.Parts[0].Status, f, answered)
	}
	if err := s.KillHandler(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	poll.Until(t, 30*time.Second, "the dead handler's calls gone", func() bool { return s.Sim.Stats().Open == 0 })
	// While the model is frozen the part is in its fallback: the job as
	// the tenant reads it, and the webhook event its start recorded, go
	// through the proxy that checks them against the API's OpenAPI
	// document.
	var mid struct {
		Parts []struct {
			Status   batch.PartStatus `json:"status"`
			Fallback *struct {
				Reason string `json:"reason"`
				Items  int    `json:"items"`
				Done   int    `json:"done"`
			} `json:"fallback"`
		} `json:"parts"`
	}
	if st := s.Do(http.MethodGet, "/api/v1/batches/"+j.ID, "contoso", nil, &mid); st != http.StatusOK || len(mid.Parts) != 1 ||
		mid.Parts[0].Status != batch.PartFallback || mid.Parts[0].Fallback == nil || mid.Parts[0].Fallback.Items != items {
		t.Fatalf("job read mid-fallback: %d %+v", st, mid)
	}
	var events struct {
		Data []struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		} `json:"data"`
	}
	if st := s.DoAdmin(http.MethodGet, "/api/v1/tenants/contoso/webhook/events", nil, &events); st != http.StatusOK ||
		len(events.Data) != 1 || events.Data[0].Type != "batch.fallback" || events.Data[0].ID != "msg_"+j.ID+"_batch.fallback" {
		t.Errorf("webhook events %d %+v, want the fallback's", st, events)
	}
	if err := s.Sim.SetFaults([]aoaisim.FaultRule{validating}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "the fallback resumed", func() bool { return served().Requests > answered })
	resumed := time.Since(killed)
	if !poll.Within(120*time.Second, func() bool {
		s.Do(http.MethodGet, "/api/v1/batches/"+j.ID, "contoso", nil, &j)
		return j.State == batch.Harvested
	}) {
		t.Fatalf("not harvested after the restart: %s", j.State)
	}
	t.Logf("killed %v after the submission, with %d of %d items answered (%d recorded done, the rest of their group kept and booked); resumed %v after the kill, harvested %v after it",
		killed.Sub(start).Round(time.Millisecond), answered, items, before.Parts[0].Fallback.Done, resumed.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))

	var raw []byte
	if st := s.Do(http.MethodGet, "/api/v1/batches/"+j.ID+"/results", "contoso", nil, &raw); st != http.StatusOK {
		t.Fatalf("results: %d", st)
	}
	seen := map[string]bool{}
	var fromSync int
	var results ledger.Usage
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r batch.ResultLine
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Outcome != batch.OK {
			t.Fatalf("result %s: %v", l, err)
		}
		if seen[r.ItemID] {
			t.Errorf("item %s answered twice", r.ItemID)
		}
		seen[r.ItemID] = true
		if r.Source == batch.SourceSync {
			fromSync++
		}
		if r.Usage == nil {
			t.Fatalf("result %s has no usage", l)
		}
		results.PromptTokens += r.Usage.PromptTokens
		results.CompletionTokens += r.Usage.CompletionTokens
	}
	if len(seen) != items || fromSync != items {
		t.Fatalf("%d items answered, %d by the fallback; want all %d by it", len(seen), fromSync, items)
	}
	d := served()
	rows, u := booked()
	if rows != items || d.Requests != items {
		t.Errorf("%d fallback ledger rows, %d synchronous calls served, want %d of each: every item asked and booked once", rows, d.Requests, items)
	}
	if u.PromptTokens != d.PromptTokens || u.CompletionTokens != d.CompletionTokens ||
		u.PromptTokens != results.PromptTokens || u.CompletionTokens != results.CompletionTokens {
		t.Errorf("ledger %d/%d tokens, simulator served %d/%d, results %d/%d", u.PromptTokens, u.CompletionTokens,
			d.PromptTokens, d.CompletionTokens, results.PromptTokens, results.CompletionTokens)
	}
}
