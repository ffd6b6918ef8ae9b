package webhook_test

import (
	"bytes"
	"encoding/json"
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
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is needed (Node.js 20, as for Azurite)")
	}
	var mu sync.Mutex
	var got []delivery
	arrived := make(chan struct{}, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, delivery{Headers: map[string]string{"webhook-id": r.Header.Get("webhook-id"),
			"webhook-timestamp": r.Header.Get("webhook-timestamp"), "webhook-signature": r.Header.Get("webhook-signature")}, Body: string(b)})
		first := len(got) == 1
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusInternalServerError)
		}
		arrived <- struct{}{}
	}))
	defer recv.Close()
	speed := 20000.0
	s := apptest.Start(t, apptest.Config{Sim: aoaisim.Config{Deployments: aoaisim.DefaultDeployments(), Speed: &speed},
		Settings: map[string]string{"OFFPATH_WEBHOOK_SCHEDULE": "*/1 * * * * *"}})

	var reg struct {
		Secret string `json:"secret"`
	}
	if st := s.DoAdmin(http.MethodPut, "/api/v1/tenants/contoso/webhook", map[string]any{"url": recv.URL + "/hooks"}, &reg); st != http.StatusOK {
		t.Fatalf("register: %d", st)
	}
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
		case <-arrived:
		case <-time.After(60 * time.Second):
			t.Fatalf("%d deliveries, want 2", len(got))
		}
	}
	mu.Lock()
	deliveries := append([]delivery(nil), got...)
	mu.Unlock()
	for _, d := range deliveries {
		if d.Headers["webhook-id"] != "msg_"+job.ID+"_batch.completed" || strings.Contains(d.Body, "VPN") ||
			!strings.Contains(d.Body, `"type":"batch.completed"`) || !strings.Contains(d.Body, `"ok":1`) {
			t.Errorf("delivery %+v", d)
		}
	}
	in, _ := json.Marshal(deliveries)
	cmd := exec.CommandContext(t.Context(), node, filepath.Join("testdata", "verify.mjs"))
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+reg.Secret)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"verified":2`) {
		t.Fatalf("standardwebhooks verify: %v\n%s", err, out)
	}

	// The event records both attempts; it is delivered, so no run sends it
	// again (Due excludes it; the dispatcher's unit test shows a later run).
	var events struct {
		Data []struct {
			ID        string `json:"id"`
			Delivered bool   `json:"delivered"`
			Attempts  []struct {
				Status int `json:"status"`
			} `json:"attempts"`
		} `json:"data"`
	}
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
