package webhook_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/apptest"
	"github.com/offpath/offpath/internal/testing/poll"
)

func TestMain(m *testing.M) {
	code := m.Run()
	apptest.Cleanup()
	os.Exit(code)
}

type delivery struct {
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// receiver is a tenant's webhook endpoint: it keeps every delivery and
// answers 200, or 500 to the first when failFirst is set.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	got     []delivery
	arrived chan struct{}
}

func newReceiver(t *testing.T, failFirst bool) *receiver {
	t.Helper()
	r := &receiver{arrived: make(chan struct{}, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, delivery{Headers: map[string]string{"webhook-id": req.Header.Get("webhook-id"),
			"webhook-timestamp": req.Header.Get("webhook-timestamp"), "webhook-signature": req.Header.Get("webhook-signature")}, Body: string(b)})
		first := len(r.got) == 1
		r.mu.Unlock()
		if first && failFirst {
			w.WriteHeader(http.StatusInternalServerError)
		}
		r.arrived <- struct{}{}
	}))
	t.Cleanup(r.Close)
	return r
}

// deliveries returns what arrived so far.
func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// verify checks every delivery with the standardwebhooks package, as a
// receiver would, under the endpoint's secret.
func verify(t *testing.T, secret string, deliveries []delivery) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is needed (Node.js 20, as for Azurite)")
	}
	in, _ := json.Marshal(deliveries)
	cmd := exec.CommandContext(t.Context(), node, filepath.Join("testdata", "verify.mjs"))
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf(`"verified":%d`, len(deliveries))) {
		t.Fatalf("standardwebhooks verify: %v\n%s", err, out)
	}
}

// register registers the receiver as contoso's endpoint and returns its
// secret.
func register(t *testing.T, s *apptest.Stack, r *receiver) string {
	t.Helper()
	var reg struct {
		Secret string `json:"secret"`
	}
	if st := s.DoAdmin(http.MethodPut, "/api/v1/tenants/contoso/webhook", map[string]any{"url": r.URL + "/hooks"}, &reg); st != http.StatusOK {
		t.Fatalf("register: %d", st)
	}
	return reg.Secret
}

// webhookEvents is the admin's listing of an endpoint's events.
type webhookEvents struct {
	Data []struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Delivered bool   `json:"delivered"`
		Attempts  []struct {
			Status int `json:"status"`
		} `json:"attempts"`
	} `json:"data"`
}

// TestWebhook_ThroughTheDevHost: the admin registers contoso's endpoint;
// contoso's job ends; the webhook-deliver timer posts batch.completed,
// answered 500, then again after the backoff, answered 200; both
// deliveries verify with the standardwebhooks package; the event records
// both attempts; the body has no prompt and no answer.
func TestWebhook_ThroughTheDevHost(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	recv := newReceiver(t, true)
	speed := 20000.0
	s := apptest.Start(t, apptest.Config{Sim: aoaisim.Config{Deployments: aoaisim.DefaultDeployments(), Speed: &speed},
		Settings: map[string]string{"OFFPATH_WEBHOOK_SCHEDULE": "*/1 * * * * *"}})
	secret := register(t, s, recv)
	const prompt = "Ticket 7: the VPN drops every hour."
	var job struct {
		ID string `json:"id"`
	}
	if st := s.Do(http.MethodPost, "/api/v1/batches", "contoso", map[string]any{"alias": "summarize", "max_tokens": 16,
		"items": []map[string]any{{"id": "t-7", "prompt": prompt}}}, &job); st != http.StatusAccepted {
		t.Fatalf("submit: %d", st)
	}
	for range 2 {
		select {
		case <-recv.arrived:
		case <-time.After(60 * time.Second):
			t.Fatalf("%d deliveries, want 2", len(recv.deliveries()))
		}
	}
	deliveries := recv.deliveries()
	for _, d := range deliveries {
		if d.Headers["webhook-id"] != "msg_"+job.ID+"_batch.completed" || strings.Contains(d.Body, "VPN") ||
			!strings.Contains(d.Body, `"type":"batch.completed"`) || !strings.Contains(d.Body, `"ok":1`) {
			t.Errorf("delivery %+v", d)
		}
	}
	verify(t, secret, deliveries)

	// The event records both attempts; it is delivered, so no run sends it
	// again (Due excludes it; the dispatcher's unit test shows a later run).
	var events webhookEvents
	if !poll.Within(30*time.Second, func() bool {
		s.DoAdmin(http.MethodGet, "/api/v1/tenants/contoso/webhook/events", nil, &events)
		return len(events.Data) == 1 && events.Data[0].Delivered
	}) {
		t.Fatalf("events %+v", events)
	}
	if a := events.Data[0].Attempts; len(a) != 2 || a[0].Status != 500 || a[1].Status != 200 {
		t.Errorf("attempts %+v, want 500 then 200", a)
	}
}

// TestWebhook_FallbackThroughTheDevHost: contoso's job has a complete_by
// its batch cannot meet (Azure keeps it validating, and its 1,000 lines
// leave no time to wait: see the batch package's deadline rule), so its
// part falls back to the synchronous deployment at once. The deliver
// timer posts exactly one batch.fallback, with the deadline and the
// rule's reason, the job still submitted (not ended), signed like every event (the standardwebhooks package
// verifies it), and, once the fallback has answered every item, one
// batch.completed; the events, read through the proxy that checks the
// API against its OpenAPI document, are those two, each delivered at its
// first attempt.
func TestWebhook_FallbackThroughTheDevHost(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	const batchDep, syncDep, items = "gpt-4o-mini-batch", "gpt-4o-mini", 1000
	validating := aoaisim.FaultRule{Deployment: batchDep, HoldValidating: aoaisim.Duration(48 * time.Hour)}
	speed := 600.0
	recv := newReceiver(t, false)
	s := apptest.Start(t, apptest.Config{Sim: aoaisim.Config{Speed: &speed, Faults: []aoaisim.FaultRule{validating},
		Deployments: []aoaisim.Deployment{
			{Name: batchDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeGlobalBatch},
			{Name: syncDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeStandard}}},
		Settings: map[string]string{"OFFPATH_WEBHOOK_SCHEDULE": "*/1 * * * * *"}})
	secret := register(t, s, recv)
	var list []map[string]any
	for i := range items {
		list = append(list, map[string]any{"id": fmt.Sprintf("late-%d", i), "prompt": fmt.Sprintf("Ticket %d: the VPN drops every hour.", i)})
	}
	due := time.Now().Add(batch.MinCompleteBy + time.Minute).UTC().Truncate(time.Second)
	var job struct {
		ID    string      `json:"id"`
		State batch.State `json:"state"`
		Parts []struct {
			Fallback *struct {
				Reason string `json:"reason"`
			} `json:"fallback"`
		} `json:"parts"`
	}
	if st := s.Do(http.MethodPost, "/api/v1/batches", "contoso", map[string]any{"alias": "summarize", "system_prompt": "Summarise.",
		"max_tokens": 24, "items": list, "complete_by": due.Format(time.RFC3339)}, &job); st != http.StatusAccepted {
		t.Fatalf("submit: %d", st)
	}
	var events webhookEvents
	delivered := func(typ string) bool {
		s.DoAdmin(http.MethodGet, "/api/v1/tenants/contoso/webhook/events", nil, &events)
		for _, e := range events.Data {
			if e.Type == typ && e.Delivered {
				return true
			}
		}
		return false
	}
	poll.Until(t, 90*time.Second, "batch.fallback delivered", func() bool { return delivered("batch.fallback") })
	poll.Until(t, 180*time.Second, "the job harvested", func() bool {
		s.Do(http.MethodGet, "/api/v1/batches/"+job.ID, "contoso", nil, &job)
		return job.State == batch.Harvested
	})
	poll.Until(t, 60*time.Second, "batch.completed delivered", func() bool { return delivered("batch.completed") })

	if len(events.Data) != 2 {
		t.Errorf("events %+v, want batch.fallback and batch.completed", events)
	}
	for _, e := range events.Data {
		if e.ID != "msg_"+job.ID+"_"+e.Type || len(e.Attempts) != 1 || e.Attempts[0].Status != http.StatusOK {
			t.Errorf("event %+v, want delivered at its first attempt", e)
		}
	}
	deliveries := recv.deliveries()
	var fallbacks int
	for _, d := range deliveries {
		var p struct {
			Type string `json:"type"`
			Data struct {
				Job            string      `json:"job"`
				State          batch.State `json:"state"`
				Final          batch.State `json:"final"`
				CompleteBy     time.Time   `json:"complete_by"`
				FallbackReason string      `json:"fallback_reason"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(d.Body), &p); err != nil || strings.Contains(d.Body, "VPN") {
			t.Fatalf("delivery %+v: %v", d, err)
		}
		if p.Type != "batch.fallback" {
			continue
		}
		fallbacks++
		if d.Headers["webhook-id"] != "msg_"+job.ID+"_batch.fallback" || p.Data.Job != job.ID || !p.Data.CompleteBy.Equal(due) ||
			len(job.Parts) != 1 || job.Parts[0].Fallback == nil || p.Data.FallbackReason != job.Parts[0].Fallback.Reason {
			t.Errorf("batch.fallback delivery %+v, want the job's deadline and its part's reason (%+v)", d, job.Parts)
		}
		// Its items are still being answered: the job has not ended.
		if p.Data.State != batch.Submitted || p.Data.Final != "" {
			t.Errorf("batch.fallback says the job is %s (final %q), want submitted, not ended", p.Data.State, p.Data.Final)
		}
	}
	if fallbacks != 1 || len(deliveries) != 2 {
		t.Errorf("%d deliveries, %d of them batch.fallback; want two, one of each event", len(deliveries), fallbacks)
	}
	verify(t, secret, deliveries)
}
