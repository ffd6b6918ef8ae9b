package batch_test

import (
	"context"
	"encoding/json"
	"fmt"
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

type jobJSON struct {
	ID       string           `json:"id"`
	State    batch.State      `json:"state"`
	Final    batch.State      `json:"final"`
	Items    int              `json:"items"`
	Created  time.Time        `json:"created"`
	Outcomes batch.Counts     `json:"outcomes"`
	Usage    ledger.UsageView `json:"usage"`
	Parts    []struct {
		HeldReason string `json:"held_reason"`
	} `json:"parts"`
}

func e2eBody(prefix string, n int) map[string]any {
	var items []map[string]any
	for i := range n {
		items = append(items, map[string]any{"id": fmt.Sprintf("%s-%d", prefix, i), "prompt": fmt.Sprintf("Ticket %d from %s: the VPN drops every hour.", i, prefix)})
	}
	return map[string]any{"alias": "summarize", "system_prompt": "Summarise.", "max_tokens": 24, "items": items}
}

// TestEndToEnd_TwoTenantsThroughTheDevHost runs the whole life cycle
// through the dev host and the real handler, for two tenants at once: the
// deployment's quota takes one job at a time, so one waits in held; the
// batch-poll timer fires every second; both jobs end harvested, their
// results are read through the API and their usage is in the ledger.
func TestEndToEnd_TwoTenantsThroughTheDevHost(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	// Slow enough (about 3 s a job) that the second job is submitted while
	// the first runs, whenever the timer fires.
	sim := simConfig(60, aoaisim.Deployment{Name: batchDep, Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch,
		EnqueuedTokenQuota: 3000, QuotaBehaviour: aoaisim.QuotaFailFast})
	s := apptest.Start(t, apptest.Config{Sim: sim})
	ids := map[string]string{}
	for _, tn := range []string{"contoso", "fabrikam"} {
		var j jobJSON
		if st := s.Do(http.MethodPost, "/api/v1/batches", tn, e2eBody(tn, 30), &j); st != http.StatusAccepted {
			t.Fatalf("%s submit: %d", tn, st)
		}
		ids[tn] = j.ID
	}
	seen := map[batch.State]bool{}
	if !poll.Within(120*time.Second, func() bool {
		done := 0
		for tn, id := range ids {
			var j jobJSON
			s.Do(http.MethodGet, "/api/v1/batches/"+id, tn, nil, &j)
			seen[j.State] = true
			if j.State == batch.Harvested {
				done++
			}
		}
		return done == len(ids)
	}) {
		t.Fatalf("not harvested after 120 s; states seen %v", seen)
	}
	held := 0
	for tn, id := range ids {
		j, err := s.Jobs.Get(context.Background(), tn, id)
		if err != nil {
			t.Fatal(err)
		}
		if !j.Parts[0].HeldSince.IsZero() {
			held++
		}
	}
	if held != 1 || !seen[batch.Submitted] {
		t.Errorf("%d jobs were held (states seen by the client: %v), want one held while the other ran", held, seen)
	}
	for tn, id := range ids {
		var j jobJSON
		s.Do(http.MethodGet, "/api/v1/batches/"+id, tn, nil, &j)
		if j.Final != batch.Completed || j.Outcomes.OK != 30 || j.Outcomes.Total() != int64(j.Items) {
			t.Errorf("%s job: %+v", tn, j)
		}
		var raw []byte
		if st := s.Do(http.MethodGet, "/api/v1/batches/"+id+"/results", tn, nil, &raw); st != 200 {
			t.Fatalf("%s results: %d", tn, st)
		}
		var prompt, completion int64
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		for _, l := range lines {
			var r batch.ResultLine
			if err := json.Unmarshal([]byte(l), &r); err != nil || r.Outcome != batch.OK || !strings.HasPrefix(r.ItemID, tn+"-") {
				t.Errorf("%s result %s: %v", tn, l, err)
				continue
			}
			prompt += r.Usage.PromptTokens
			completion += r.Usage.CompletionTokens
		}
		if len(lines) != 30 || j.Usage.PromptTokens != prompt || j.Usage.CompletionTokens != completion {
			t.Errorf("%s: %d results with %d/%d tokens; job says %d/%d", tn, len(lines), prompt, completion, j.Usage.PromptTokens, j.Usage.CompletionTokens)
		}
		var usage ledger.ReportView
		s.Do(http.MethodGet, "/api/v1/usage", tn, nil, &usage)
		if usage.Total.PromptTokens != prompt || usage.Total.CompletionTokens != completion || len(usage.Lines) != 1 || usage.Lines[0].Path != ledger.Batch {
			t.Errorf("%s usage %+v, want exactly the job's %d/%d on the batch path", tn, usage, prompt, completion)
		}
		// Another tenant's job is a 404.
		other := map[string]string{"contoso": "fabrikam", "fabrikam": "contoso"}[tn]
		if st := s.Do(http.MethodGet, "/api/v1/batches/"+id, other, nil, nil); st != http.StatusNotFound {
			t.Errorf("%s reading %s's job: %d, want 404", other, tn, st)
		}
	}
}

// TestEndToEnd_KillMidHarvest kills the handler process while it harvests
// a large job, after the copy of Azure's output is recorded and before the
// job is marked harvested; the dev host restarts the handler, the next poll (once the dead
// poller's lease has run out) finishes the job, and the usage is counted
// once.
func TestEndToEnd_KillMidHarvest(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	s := apptest.Start(t, apptest.Config{Sim: simConfig(20000), Settings: map[string]string{"OFFPATH_BATCH_LEASE_TTL": "2s"}})
	var j jobJSON
	if st := s.Do(http.MethodPost, "/api/v1/batches", "contoso", e2eBody("big", 12000), &j); st != http.StatusAccepted {
		t.Fatalf("submit: %d", st)
	}
	killed, copied := false, false
	deadline := time.Now().Add(120 * time.Second)
	for !killed {
		stored, err := s.Jobs.Get(context.Background(), "contoso", j.ID)
		if err != nil {
			t.Fatal(err)
		}
		p := stored.Parts[0]
		if p.Status == batch.PartHarvested {
			t.Fatal("the harvest finished before the test could kill it")
		}
		if p.Status == batch.PartDone && stored.Lease.Owner != "" { // its harvest under way
			copied = p.Copied
			if err := s.KillHandler(); err != nil {
				t.Fatal(err)
			}
			killed = true
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job never reached its harvest: %s", stored.State)
		}
		// A fixed short pause, not poll's doubling one: the harvest's
		// window for the kill lasts only so long, and a pause grown to
		// 100 ms could step over it.
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("killed the handler mid-harvest (copies recorded: %v)", copied)
	if !poll.Within(time.Until(deadline), func() bool {
		s.Do(http.MethodGet, "/api/v1/batches/"+j.ID, "contoso", nil, &j)
		return j.State == batch.Harvested
	}) {
		t.Fatalf("not harvested after the restart: %s", j.State)
	}
	if j.Outcomes.OK != 12000 {
		t.Errorf("outcomes %+v, want 12000 ok", j.Outcomes)
	}
	entries, err := s.Ledger.Month(context.Background(), "contoso", ledger.MonthOf(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].PromptTokens != j.Usage.PromptTokens || entries[0].CompletionTokens != j.Usage.CompletionTokens {
		t.Errorf("ledger %+v, want one row with the job's %d/%d tokens", entries, j.Usage.PromptTokens, j.Usage.CompletionTokens)
	}
}
