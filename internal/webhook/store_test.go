package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/webhook"
)

// TestStore_Contract runs one suite against the in-memory Store the
// dispatcher's tests use and tablestore's Webhooks on Azurite, so that
// what those tests learn holds for the store the handler runs on.
func TestStore_Contract(t *testing.T) {
	t.Parallel()
	eps := []webhook.Endpoint{
		{Tenant: "contoso", URL: "https://contoso.example/hook", Secret: "whsec_Y29udG9zbw==", Created: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)},
		{Tenant: "fabrikam", URL: "https://fabrikam.example/hook", Secret: "whsec_ZmFicmlrYW0=", Created: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)},
	}
	for name, open := range map[string]func(t *testing.T) webhook.Store{
		"memory": func(*testing.T) webhook.Store { return webhook.NewMemStore(eps...) },
		"tablestore": func(t *testing.T) webhook.Store {
			az := azurite.Start(t)
			svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: az.ConnectionString()})
			if err != nil {
				t.Fatal(err)
			}
			s := tablestore.NewWebhooks(svc, "")
			for _, ep := range eps {
				if err := s.PutEndpoint(context.Background(), ep); err != nil {
					t.Fatal(err)
				}
			}
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			storeContract(t, open(t), eps)
		})
	}
}

// show is an event as the suite compares it, its ETag aside.
func show(e webhook.Event) string {
	return fmt.Sprintf("%s/%s %s job %s %s created %s delivered %v abandoned %v next %s attempts %+v",
		e.Tenant, e.ID, e.Type, e.Job, e.Payload, e.Created.UTC().Format(time.RFC3339Nano), e.Delivered, e.Abandoned,
		e.NextAttempt.UTC().Format(time.RFC3339Nano), e.Attempts)
}

func shows(es []webhook.Event) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, show(e))
	}
	return out
}

func storeContract(t *testing.T, s webhook.Store, eps []webhook.Endpoint) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

	got, err := s.Endpoints(ctx)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(eps) {
		t.Errorf("Endpoints = %+v, %v; want %+v (by tenant)", got, err, eps)
	}
	if due, err := s.Due(ctx, now); err != nil || len(due) != 0 {
		t.Errorf("Due with no events = %+v, %v", due, err)
	}

	ev := func(tenantID, id string, next time.Time) webhook.Event {
		return webhook.Event{Tenant: tenantID, ID: id, Type: webhook.TypeCompleted, Job: "job-" + id,
			Payload: []byte(`{"type":"batch.completed","data":{"id":"job-` + id + `"}}`), Created: now.Add(-time.Hour), NextAttempt: next}
	}
	a, b, c := ev("fabrikam", "msg_b", now.Add(-time.Minute)), ev("contoso", "msg_a", now), ev("contoso", "msg_c", now.Add(time.Minute))
	for _, e := range []webhook.Event{a, b, c} {
		if err := s.AddEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// An event of the same tenant and id again is not recorded: the first stays.
	again := a
	again.Type, again.Payload = webhook.TypeFailed, []byte(`{}`)
	if err := s.AddEvent(ctx, again); err != nil {
		t.Errorf("AddEvent of an existing event: %v, want nil", err)
	}
	// The same id at another tenant is another event.
	d := ev("contoso", "msg_b", now.Add(-time.Second))
	if err := s.AddEvent(ctx, d); err != nil {
		t.Fatal(err)
	}

	// Due: pending events whose next attempt is at or before now, by
	// tenant and id, each with an ETag.
	due, err := s.Due(ctx, now)
	if want := []string{show(b), show(d), show(a)}; err != nil || fmt.Sprint(shows(due)) != fmt.Sprint(want) {
		t.Fatalf("Due(now) =\n %v, %v\nwant\n %v", shows(due), err, want)
	}
	for _, e := range due {
		if e.ETag == "" {
			t.Errorf("due event %s/%s has no ETag", e.Tenant, e.ID)
		}
	}

	// A conditional update: with its ETag, it replaces the event and
	// gives a new ETag; with the old one, or for an event that does not
	// exist, it is a conflict.
	first := due[0]
	next := first
	next.Attempts = append(next.Attempts, webhook.Attempt{At: now, Status: 500, Duration: 30 * time.Millisecond})
	next.NextAttempt = now.Add(10 * time.Second)
	updated, err := s.UpdateEvent(ctx, next)
	if err != nil || updated.ETag == "" || updated.ETag == first.ETag {
		t.Fatalf("UpdateEvent = ETag %q, %v; want a new ETag (was %q)", updated.ETag, err, first.ETag)
	}
	stale := first
	stale.Delivered = true
	if _, err := s.UpdateEvent(ctx, stale); !errors.Is(err, webhook.ErrConflict) {
		t.Errorf("UpdateEvent with a stale ETag: %v, want ErrConflict", err)
	}
	ghost := ev("contoso", "msg_never_added", now)
	ghost.ETag = first.ETag
	if _, err := s.UpdateEvent(ctx, ghost); !errors.Is(err, webhook.ErrConflict) {
		t.Errorf("UpdateEvent of an event never added: %v, want ErrConflict", err)
	}
	ghost.ETag = ""
	if _, err := s.UpdateEvent(ctx, ghost); !errors.Is(err, webhook.ErrConflict) {
		t.Errorf("UpdateEvent of an event never added, without an ETag: %v, want ErrConflict", err)
	}

	// The retried event is due again once its next attempt comes; a
	// delivered one and an abandoned one never again.
	if due, _ := s.Due(ctx, now); fmt.Sprint(shows(due)) != fmt.Sprint([]string{show(d), show(a)}) {
		t.Errorf("Due(now) after the retry was set =\n %v", shows(due))
	}
	later := now.Add(time.Hour)
	due, err = s.Due(ctx, later)
	if want := []string{show(next), show(d), show(c), show(a)}; err != nil || fmt.Sprint(shows(due)) != fmt.Sprint(want) {
		t.Fatalf("Due(an hour later) =\n %v, %v\nwant\n %v", shows(due), err, want)
	}
	for _, e := range due {
		switch e.ID {
		case "msg_a":
			e.Delivered = true
		case "msg_c":
			e.Abandoned = true
		default:
			continue
		}
		if _, err := s.UpdateEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if due, err := s.Due(ctx, later); err != nil || fmt.Sprint(shows(due)) != fmt.Sprint([]string{show(d), show(a)}) {
		t.Errorf("Due after a delivery and an abandonment =\n %v, %v", shows(due), err)
	}
}
