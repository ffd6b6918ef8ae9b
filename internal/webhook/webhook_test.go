package webhook

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
)

// memStore is an in-memory Store, held to tablestore's Webhooks by the
// contract suite in store_test.go: endpoints by tenant, due events by
// tenant and id, an update of an event that does not exist a conflict.
type memStore struct {
	mu     sync.Mutex
	eps    []Endpoint
	events map[string]Event
	n      int
}

func (m *memStore) Endpoints(context.Context) ([]Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.eps)
	slices.SortFunc(out, func(a, b Endpoint) int { return strings.Compare(a.Tenant, b.Tenant) })
	return out, nil
}

func (m *memStore) AddEvent(_ context.Context, e Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := e.Tenant + "/" + e.ID
	if _, ok := m.events[k]; !ok {
		m.n++
		e.ETag = strconv.Itoa(m.n)
		m.events[k] = e
	}
	return nil
}

func (m *memStore) Due(_ context.Context, now time.Time) ([]Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Event
	for _, e := range m.events {
		if !e.Delivered && !e.Abandoned && !e.NextAttempt.After(now) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Event) int {
		return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (m *memStore) UpdateEvent(_ context.Context, e Event) (Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := e.Tenant + "/" + e.ID
	if old, ok := m.events[k]; !ok || old.ETag != e.ETag {
		return Event{}, ErrConflict
	}
	m.n++
	e.ETag = strconv.Itoa(m.n)
	m.events[k] = e
	return e, nil
}

// memJobs stands for the batch control plane's List (batch.Service, not a
// store): a tenant's jobs in state (empty: any), newest first, as it
// lists them, all on one page.
type memJobs []batch.Job

func (j memJobs) List(_ context.Context, tenantID string, state batch.State, _ string, _ int) ([]batch.Job, string, error) {
	var out []batch.Job
	for _, x := range j {
		if x.Tenant == tenantID && (state == "" || x.State == state) {
			out = append(out, x)
		}
	}
	slices.SortStableFunc(out, func(a, b batch.Job) int { return b.Created.Compare(a.Created) })
	return out, "", nil
}

// TestDispatcher_RetriesThenDeliversOnce: a harvested job's event is
// signed and posted; a 500 (each event's first try) is retried after the backoff, not before; after
// the 2xx nothing is sent again; a job from before the registration and
// a running job are not announced; a long hold is.
func TestDispatcher_RetriesThenDeliversOnce(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	var bodies []string
	tries := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got, bodies = append(got, r), append(bodies, string(b))
		if tries[r.Header.Get("webhook-id")]++; tries[r.Header.Get("webhook-id")] == 1 {
			w.WriteHeader(http.StatusInternalServerError) // each event's first try fails
		}
	}))
	defer srv.Close()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ep, err := Register("contoso", srv.URL, now.Add(-time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	store := &memStore{eps: []Endpoint{ep}, events: map[string]Event{}}
	jobs := memJobs{
		{ID: "done", Tenant: "contoso", State: batch.Harvested, Final: batch.Completed, Created: now.Add(-30 * time.Minute), Items: 3},
		{ID: "running", Tenant: "contoso", State: batch.Submitted, Created: now.Add(-20 * time.Minute)},
		{ID: "held", Tenant: "contoso", State: batch.Held, Created: now.Add(-50 * time.Minute),
			Parts: []batch.Part{{HeldSince: now.Add(-45 * time.Minute), HeldReason: "quota"}}},
		{ID: "old", Tenant: "contoso", State: batch.Harvested, Final: batch.Completed, Created: now.Add(-2 * time.Hour)},
		{ID: "other", Tenant: "fabrikam", State: batch.Harvested, Final: batch.Failed, Created: now.Add(-time.Minute)},
	}
	d, err := New(Options{Store: store, Jobs: jobs, Now: clock, HeldAfter: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := d.Run(context.Background())
	if err != nil || rep.Recorded != 2 || rep.Failed != 2 {
		t.Fatalf("first run: %+v, %v", rep, err)
	}
	rep, err = d.Run(context.Background()) // before the backoff: nothing due
	if err != nil || rep.Delivered+rep.Failed != 0 || len(got) != 2 {
		t.Fatalf("second run: %+v, %v, %d requests", rep, err, len(got))
	}
	now = now.Add(DefaultBackoff[0])
	if rep, err = d.Run(context.Background()); err != nil || rep.Delivered != 2 || len(got) != 4 {
		t.Fatalf("after the backoff: %+v, %v, %d requests", rep, err, len(got))
	}
	now = now.Add(24 * time.Hour)
	if rep, err = d.Run(context.Background()); err != nil || rep.Delivered+rep.Failed != 0 || len(got) != 4 {
		t.Fatalf("after delivery: %+v, %v, %d requests", rep, err, len(got))
	}
	types := map[string]int{}
	for i, r := range got {
		id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
		n, _ := strconv.ParseInt(ts, 10, 64)
		want, _ := Sign(ep.Secret, id, n, []byte(bodies[i]))
		if r.Header.Get("webhook-signature") != want || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("request %d: signature %q, want %q", i, r.Header.Get("webhook-signature"), want)
		}
		if strings.Contains(bodies[i], "prompt\"") || !strings.Contains(bodies[i], `"tenant":"contoso"`) {
			t.Errorf("body %s", bodies[i])
		}
		types[id]++
	}
	if types["msg_done_batch.completed"] != 2 || types["msg_held_batch.held"] != 2 {
		t.Errorf("deliveries by id: %v", types)
	}
	for _, e := range store.events {
		if !e.Delivered {
			t.Errorf("event %s not delivered: %+v", e.ID, e.Attempts)
		}
	}
	if e := store.events["contoso/msg_done_batch.completed"]; len(e.Attempts) != 2 || e.Attempts[0].Status != 500 || e.Attempts[1].Status != 200 {
		t.Errorf("attempts %+v", e.Attempts)
	}
}

// TestDispatcher_Abandons: an endpoint that never answers 2xx gets one
// attempt per backoff step, then the event is abandoned.
func TestDispatcher_Abandons(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls++; w.WriteHeader(http.StatusBadGateway) }))
	defer srv.Close()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ep, _ := Register("contoso", srv.URL, now.Add(-time.Hour), nil)
	store := &memStore{eps: []Endpoint{ep}, events: map[string]Event{}}
	jobs := memJobs{{ID: "j", Tenant: "contoso", State: batch.Harvested, Final: batch.Expired, Created: now.Add(-time.Minute)}}
	backoff := []time.Duration{time.Second, time.Minute}
	d, _ := New(Options{Store: store, Jobs: jobs, Now: func() time.Time { return now }, Backoff: backoff})
	var last Report
	for range 5 {
		last, _ = d.Run(context.Background())
		now = now.Add(time.Hour)
	}
	if calls != len(backoff)+1 || store.events["contoso/msg_j_batch.expired"].Abandoned != true || last.Delivered != 0 {
		t.Errorf("%d calls, event %+v", calls, store.events["contoso/msg_j_batch.expired"])
	}
}

func TestCheckURL(t *testing.T) {
	for u, ok := range map[string]bool{"https://h.example.com/x": true, "http://127.0.0.1:8080/x": true, "http://localhost/x": true,
		"http://h.example.com/x": false, "ftp://h/x": false, "https://user:pw@h/x": false, "/relative": false, "": false} {
		if err := CheckURL(u); (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v", u, err)
		}
	}
}

func (m *memStore) Endpoint(_ context.Context, tenantID string) (Endpoint, error) {
	for _, ep := range m.eps {
		if ep.Tenant == tenantID {
			return ep, nil
		}
	}
	return Endpoint{}, ErrNotFound
}

// TestAnnouncer: a harvested job of any age is recorded once for a tenant
// with an endpoint; a job from before the registration, a job still
// running and a tenant without an endpoint get nothing.
func TestAnnouncer(t *testing.T) {
	now := time.Date(2026, 3, 20, 12, 0, 0, 0, time.UTC)
	m := &memStore{events: map[string]Event{}, eps: []Endpoint{{Tenant: "contoso", URL: "https://example.com", Created: now.Add(-30 * 24 * time.Hour)}}}
	a := NewAnnouncer(m, func() time.Time { return now })
	old := batch.Job{ID: "a", Tenant: "contoso", State: batch.Harvested, Final: batch.Expired, Created: now.Add(-10 * 24 * time.Hour), HarvestedAt: now}
	before := batch.Job{ID: "b", Tenant: "contoso", State: batch.Harvested, Final: batch.Completed, Created: now.Add(-40 * 24 * time.Hour), HarvestedAt: now}
	running := batch.Job{ID: "c", Tenant: "contoso", State: batch.Submitted, Created: now}
	other := batch.Job{ID: "d", Tenant: "fabrikam", State: batch.Harvested, Final: batch.Completed, Created: now}
	for _, j := range []batch.Job{old, old, before, running, other} {
		if err := a.Announce(context.Background(), j); err != nil {
			t.Fatalf("Announce %s: %v", j.ID, err)
		}
	}
	if len(m.events) != 1 {
		t.Fatalf("events %v, want one", m.events)
	}
	if e, ok := m.events["contoso/msg_a_"+TypeExpired]; !ok || e.Type != TypeExpired || !e.NextAttempt.Equal(now) {
		t.Errorf("event %+v, want batch.expired of job a, due now", e)
	}
}

// A job one of whose parts gave up its batch for its complete_by is
// announced once as batch.fallback, with the deadline and the rule's
// reason; once harvested, as it ended.
func TestAnnouncer_Fallback(t *testing.T) {
	now := time.Date(2026, 3, 20, 12, 0, 0, 0, time.UTC)
	m := &memStore{events: map[string]Event{}, eps: []Endpoint{{Tenant: "contoso", URL: "https://example.com", Created: now.Add(-time.Hour)}}}
	a := NewAnnouncer(m, func() time.Time { return now })
	due := now.Add(2 * time.Hour)
	j := batch.Job{ID: "f", Tenant: "contoso", State: batch.Submitted, Created: now, CompleteBy: due, Parts: []batch.Part{
		{Status: batch.PartHarvested},
		{Status: batch.PartFallback, Fallback: &batch.Fallback{Reason: batch.RiskValidating}},
	}}
	for range 2 {
		if err := a.Announce(context.Background(), j); err != nil {
			t.Fatal(err)
		}
	}
	e, ok := m.events["contoso/msg_f_"+TypeFallback]
	if len(m.events) != 1 || !ok {
		t.Fatalf("events %v, want one batch.fallback", m.events)
	}
	var p struct {
		Type string `json:"type"`
		Data struct {
			CompleteBy     time.Time `json:"complete_by"`
			FallbackReason string    `json:"fallback_reason"`
		} `json:"data"`
	}
	if err := json.Unmarshal(e.Payload, &p); err != nil || p.Type != TypeFallback || !p.Data.CompleteBy.Equal(due) || p.Data.FallbackReason != batch.RiskValidating {
		t.Errorf("payload %s (%v)", e.Payload, err)
	}
	j.State, j.Final = batch.Harvested, batch.Completed
	if err := a.Announce(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.events["contoso/msg_f_"+TypeCompleted]; len(m.events) != 2 || !ok {
		t.Errorf("events %v, want batch.fallback then batch.completed", m.events)
	}
}
