package batch_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/webhook"
)

// TestAnnounce_OldJobHarvested: a job made ten days ago, beyond the
// webhook scan's window, is announced as it is harvested: the
// control plane records its event through the Announcer, and the
// dispatcher delivers it exactly once; fabrikam, with no endpoint, gets
// no event.
func TestAnnounce_OldJobHarvested(t *testing.T) {
	t.Parallel()
	hooks := webhookStore(t, "b")
	var lag atomic.Int64 // how far the control plane's clock is behind
	const tenDays = 10 * 24 * time.Hour
	lag.Store(int64(tenDays))
	e := newEnv(t, envConfig{sim: simConfig(3000), tweak: func(o *batch.Options) {
		o.Now = func() time.Time { return time.Now().Add(-time.Duration(lag.Load())) }
		o.Announcer = webhook.NewAnnouncer(hooks, nil)
	}})
	ctx := e.ctx()

	delivered := receiveWebhooks(t, hooks, "contoso")

	j := e.submit("contoso", items(3, "old"))
	theirs := e.submit("fabrikam", items(2, "old"))
	if age := time.Since(j.Created); age < tenDays-time.Minute {
		t.Fatalf("job made %v ago, want ten days", age)
	}
	lag.Store(0)
	e.pollUntil(30*time.Second, harvested, j.ID, theirs.ID)

	deliverOnce(t, hooks, e.svc)
	if want, ids := "msg_"+j.ID+"_"+webhook.TypeCompleted, delivered(); len(ids) != 1 || ids[0] != want {
		t.Errorf("deliveries %v, want one of %s", ids, want)
	}
	events, err := hooks.Events(ctx, "contoso")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || !events[0].Delivered || len(events[0].Attempts) != 1 {
		t.Errorf("contoso's events %+v, want one, delivered at the first attempt", events)
	}
	if events, err := hooks.Events(ctx, "fabrikam"); err != nil || len(events) != 0 {
		t.Errorf("fabrikam's events %+v, %v; want none", events, err)
	}
}

// webhookStore is a webhook table of its own on the shared Azurite.
func webhookStore(t *testing.T, prefix string) *tablestore.Webhooks {
	t.Helper()
	tables, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: sharedAzurite(t).ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	return tablestore.NewWebhooks(tables, prefix+"hooks"+azurite.Suffix())
}

// receiveWebhooks registers a receiver as tenant's endpoint (made before
// any job) and returns the webhook-ids it has been sent so far.
func receiveWebhooks(t *testing.T, hooks *tablestore.Webhooks, tenant string) func() []string {
	t.Helper()
	var mu sync.Mutex
	var ids []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ids = append(ids, r.Header.Get("webhook-id"))
		mu.Unlock()
	}))
	t.Cleanup(recv.Close)
	secret, err := webhook.NewSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ep := webhook.Endpoint{Tenant: tenant, URL: recv.URL, Secret: secret, Created: time.Now().Add(-11 * 24 * time.Hour)}
	if err := hooks.PutEndpoint(context.Background(), ep); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ids)
	}
}

// deliverOnce runs the dispatcher twice: the first run delivers the one
// event the control plane recorded, the second nothing; the scan finds
// nothing of its own either time.
func deliverOnce(t *testing.T, hooks *tablestore.Webhooks, jobs webhook.Jobs) {
	t.Helper()
	d, err := webhook.New(webhook.Options{Store: hooks, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	for run, want := range []int{1, 0} {
		rep, err := d.Run(context.Background())
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if rep.Recorded != 0 || rep.Delivered != want {
			t.Errorf("run %d: %+v, want nothing found by the scan and %d delivered", run, rep, want)
		}
	}
}

type failingAnnouncer struct{ calls atomic.Int64 }

func (a *failingAnnouncer) Announce(context.Context, batch.Job) error {
	a.calls.Add(1)
	return errors.New("webhook store unavailable")
}

// TestAnnounce_FailureNeverFailsTheTick: an Announcer that fails is
// logged; the poll tick harvests the job all the same, and the Announcer
// was asked once, when the job became harvested.
func TestAnnounce_FailureNeverFailsTheTick(t *testing.T) {
	t.Parallel()
	a := &failingAnnouncer{}
	e := newEnv(t, envConfig{sim: simConfig(3000), tweak: func(o *batch.Options) { o.Announcer = a }})
	j := e.submit("contoso", items(2, "fail"))
	e.pollUntil(30*time.Second, harvested, j.ID)
	for range 2 {
		if _, err := e.svc.Poll(e.ctx()); err != nil {
			t.Fatalf("Poll: %v", err)
		}
	}
	if n := a.calls.Load(); n != 1 {
		t.Errorf("Announce called %d times, want once", n)
	}
}

// TestAnnounce_OldJobHeldTooLong: a job made ten days ago, beyond the
// webhook scan's window, that Azure keeps refusing is announced as the
// control plane finds it held too long: one batch.held event, delivered
// once, however many ticks follow.
func TestAnnounce_OldJobHeldTooLong(t *testing.T) {
	t.Parallel()
	hooks := webhookStore(t, "h")
	var lag atomic.Int64 // how far the control plane's clock is behind
	const tenDays = 10 * 24 * time.Hour
	lag.Store(int64(tenDays))
	e := newEnv(t, envConfig{sim: simConfig(3000, aoaisim.Deployment{Name: batchDep, Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch,
		EnqueuedTokenQuota: 10}), // Azure refuses everything
		tweak: func(o *batch.Options) {
			o.Now = func() time.Time { return time.Now().Add(-time.Duration(lag.Load())) }
			o.HeldAlert = time.Hour
			o.Announcer = webhook.NewAnnouncer(hooks, nil)
		}})
	ctx := e.ctx()

	delivered := receiveWebhooks(t, hooks, "contoso")

	j := e.submit("contoso", items(3, "held"))
	lag.Store(int64(3 * time.Hour)) // first refused three hours ago
	if _, err := e.svc.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.get(j.ID); got.State != batch.Held {
		t.Fatalf("state %s, want held", got.State)
	}
	if n := e.alerts.Count(batch.AlertHeldTooLong); n != 0 {
		t.Fatalf("%d %s alerts before the job waited an hour", n, batch.AlertHeldTooLong)
	}
	lag.Store(0)
	for range 3 {
		if _, err := e.svc.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.alerts.Count(batch.AlertHeldTooLong); n != 1 {
		t.Fatalf("%d %s alerts, want 1 (%v)", n, batch.AlertHeldTooLong, e.alerts.Names())
	}

	deliverOnce(t, hooks, e.svc)
	if want, ids := "msg_"+j.ID+"_"+webhook.TypeHeld, delivered(); len(ids) != 1 || ids[0] != want {
		t.Errorf("deliveries %v, want one of %s", ids, want)
	}
	events, err := hooks.Events(ctx, "contoso")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Type != webhook.TypeHeld || !events[0].Delivered || len(events[0].Attempts) != 1 {
		t.Errorf("contoso's events %+v, want one batch.held, delivered at the first attempt", events)
	}
}
