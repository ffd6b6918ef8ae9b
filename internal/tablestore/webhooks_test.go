package tablestore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/webhook"
)

func TestWebhooks_EndpointsAndEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := tablestore.NewWebhooks(service(t), tableName(t, "webhooks"))
	if _, err := s.Endpoint(ctx, "contoso"); !errors.Is(err, webhook.ErrNotFound) {
		t.Fatalf("Endpoint before Put = %v", err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	ep := webhook.Endpoint{Tenant: "contoso", URL: "https://hooks.example.com/offpath", Secret: "whsec_c2VjcmV0", Created: now}
	if err := s.PutEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	got, err := s.Endpoint(ctx, "contoso")
	if err != nil || got.URL != ep.URL || got.Secret != ep.Secret || !got.Created.Equal(now) {
		t.Fatalf("Endpoint = %+v, %v", got, err)
	}
	if eps, err := s.Endpoints(ctx); err != nil || len(eps) != 1 {
		t.Fatalf("Endpoints = %+v, %v", eps, err)
	}

	e := webhook.Event{Tenant: "contoso", ID: "msg_j1_batch.completed", Type: webhook.TypeCompleted, Job: "j1",
		Payload: []byte(`{"type":"batch.completed"}`), Created: now, NextAttempt: now}
	for range 2 {
		if err := s.AddEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	later := e
	later.ID, later.NextAttempt = "msg_j2_batch.completed", now.Add(time.Hour)
	if err := s.AddEvent(ctx, later); err != nil {
		t.Fatal(err)
	}
	due, err := s.Due(ctx, now.Add(time.Second))
	if err != nil || len(due) != 1 || due[0].ID != e.ID || string(due[0].Payload) != string(e.Payload) {
		t.Fatalf("Due = %+v, %v; want the one event due", due, err)
	}
	d := due[0]
	d.Delivered = true
	d.Attempts = []webhook.Attempt{{At: now, Status: 200}}
	if _, err := s.UpdateEvent(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateEvent(ctx, d); !errors.Is(err, webhook.ErrConflict) {
		t.Errorf("update with a stale ETag = %v, want ErrConflict", err)
	}
	if due, err := s.Due(ctx, now.Add(2*time.Hour)); err != nil || len(due) != 1 || due[0].ID != later.ID {
		t.Errorf("Due after delivery = %+v, %v; want only the later event", due, err)
	}
	all, err := s.Events(ctx, "contoso")
	if err != nil || len(all) != 2 {
		t.Fatalf("Events = %+v, %v", all, err)
	}
	if err := s.DeleteEndpoint(ctx, "contoso"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteEndpoint(ctx, "contoso"); !errors.Is(err, webhook.ErrNotFound) {
		t.Errorf("second delete = %v", err)
	}
}
