package apptest_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/apptest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	apptest.Cleanup()
	os.Exit(code)
}

// TestStart_RunsTheApp starts the whole app and uses each door a test
// has: the tenant and admin API, a timer fired by hand (its own schedule
// never fires), and the alert sink. Azure refuses every job for quota, so
// the job stays held and raises held_too_long once.
func TestStart_RunsTheApp(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	s := apptest.Start(t, apptest.Config{
		Sim: aoaisim.Config{Deployments: []aoaisim.Deployment{{Name: "gpt-4o-mini-batch", Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch,
			EnqueuedTokenQuota: 10}}},
		Settings: map[string]string{"OFFPATH_BATCH_POLL_SCHEDULE": apptest.NeverSchedule, "OFFPATH_BATCH_HELD_ALERT": "1ms"},
		Tenants:  map[string][]string{"contoso": {"summarize"}},
	})

	functions, err := filepath.Glob(filepath.Join(s.AppDir, "*", "function.json"))
	if err != nil || len(functions) < 2 {
		t.Errorf("app folder has functions %v (%v), want every function of the repository", functions, err)
	}
	if st := s.Do(http.MethodGet, "/api/v1/health", "", nil, nil); st != http.StatusOK {
		t.Errorf("health: %d", st)
	}
	var tenants struct {
		Tenants []struct {
			ID string `json:"id"`
		} `json:"tenants"`
	}
	if st := s.DoAdmin(http.MethodGet, "/api/v1/tenants", nil, &tenants); st != http.StatusOK || len(tenants.Tenants) != 1 || tenants.Tenants[0].ID != "contoso" {
		t.Errorf("admin GET /api/v1/tenants: %d %+v, want 200 and contoso", st, tenants)
	}
	if st := s.Do(http.MethodGet, "/api/v1/tenants", "contoso", nil, nil); st != http.StatusForbidden {
		t.Errorf("tenant GET /api/v1/tenants: %d, want 403", st)
	}

	var job struct {
		ID    string      `json:"id"`
		State batch.State `json:"state"`
	}
	body := map[string]any{"alias": "summarize", "items": []map[string]any{{"id": "a", "prompt": "Summarise the VPN ticket."}}}
	if st := s.Do(http.MethodPost, "/api/v1/batches", "contoso", body, &job); st != http.StatusAccepted {
		t.Fatalf("submit: %d", st)
	}
	deadline := time.Now().Add(30 * time.Second)
	for s.CountAlerts(batch.AlertHeldTooLong, job.ID) == 0 && time.Now().Before(deadline) {
		s.FireAndWait("batch-poll")
	}
	a := s.WaitAlert(batch.AlertHeldTooLong, job.ID, 5*time.Second)
	if a.Tenant != "contoso" {
		t.Errorf("alert %+v, want tenant contoso", a)
	}
	// The batch-poll reply's Logs, as Application Insights records them,
	// fire the overdue rule; so does the handler's stdout (host logs).
	if tr := s.WaitRuleMatched("offpath-job-overdue", "invocation", 10*time.Second); tr.Function != "batch-poll" {
		t.Errorf("the rule fired on %+v", tr)
	}
	s.WaitRuleMatched("offpath-job-overdue", "stdout", 10*time.Second)
	s.FireAndWait("batch-poll") // a tick that starts after the alert raises none
	if n := s.CountAlerts(batch.AlertHeldTooLong, job.ID); n != 1 {
		t.Errorf("%d %s alerts, want 1: %+v", n, batch.AlertHeldTooLong, s.Alerts())
	}
	s.Do(http.MethodGet, "/api/v1/batches/"+job.ID, "contoso", nil, &job)
	if job.State != batch.Held {
		t.Errorf("state %s, want held", job.State)
	}
}
