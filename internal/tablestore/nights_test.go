package tablestore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/nightly"
	"github.com/offpath/offpath/internal/tablestore"
)

func TestNights_LifeCycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := tablestore.NewNights(service(t), tableName(t, "nights"))
	if _, err := s.Get(ctx, "support", "2026-03-14"); !errors.Is(err, nightly.ErrNotFound) {
		t.Fatalf("Get before Create = %v, want ErrNotFound", err)
	}
	if list, err := s.Unreported(ctx, "support"); err != nil || len(list) != 0 {
		t.Fatalf("Unreported of an unwritten table = %v, %v", list, err)
	}
	n := nightly.Night{Tenant: "support", Day: "2026-03-14", Run: "r1", JobID: "j1", Created: time.Now().UTC()}
	stored, err := s.Create(ctx, n)
	if err != nil || stored.ETag == "" {
		t.Fatalf("Create = %+v, %v", stored, err)
	}
	if _, err := s.Create(ctx, n); !errors.Is(err, nightly.ErrExists) {
		t.Fatalf("second Create = %v, want ErrExists", err)
	}
	if _, err := s.Create(ctx, nightly.Night{Tenant: "support", Day: "2026-03-15", Run: "r2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, nightly.Night{Tenant: "other", Day: "2026-03-14", Run: "r3"}); err != nil {
		t.Fatal(err)
	}
	list, err := s.Unreported(ctx, "support")
	if err != nil || len(list) != 2 {
		t.Fatalf("Unreported = %+v, %v; want the support tenant's two days", list, err)
	}
	// The listed record's ETag is good for an update; the stale one is not.
	first := list[0]
	first.HashesRecorded, first.ReportedAt = true, time.Now().UTC()
	updated, err := s.Update(ctx, first)
	if err != nil {
		t.Fatalf("Update with the listed ETag: %v", err)
	}
	if _, err := s.Update(ctx, stored); !errors.Is(err, nightly.ErrConflict) {
		t.Fatalf("Update with a stale ETag = %v, want ErrConflict", err)
	}
	if got, err := s.Get(ctx, "support", first.Day); err != nil || !got.Reported() || !got.HashesRecorded || got.ETag != updated.ETag {
		t.Fatalf("Get after Update = %+v, %v", got, err)
	}
	if list, _ := s.Unreported(ctx, "support"); len(list) != 1 || list[0].Day == first.Day {
		t.Fatalf("Unreported after the report = %+v", list)
	}
}

func TestSummaries_RecordAndLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := tablestore.NewSummaries(service(t), tableName(t, "sum"))
	if m, err := s.Lookup(ctx, "support", []string{"T-1"}); err != nil || len(m) != 0 {
		t.Fatalf("Lookup in an unwritten table = %v, %v", m, err)
	}
	var subs []nightly.Submitted
	for i := range 250 {
		subs = append(subs, nightly.Submitted{ID: fmt.Sprintf("T-%d", i), Hash: "h1"})
	}
	subs = append(subs, nightly.Submitted{ID: subs[0].ID, Hash: "h2"}) // the last one counts
	if err := s.Record(ctx, "support", "job1", subs); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, "other", "job2", subs[:1]); err != nil {
		t.Fatal(err)
	}
	ids := []string{"T-0", "T-1", "T-249", "T-250", "nope"}
	m, err := s.Lookup(ctx, "support", ids)
	if err != nil || len(m) != 3 || m["T-0"] != "h2" || m["T-1"] != "h1" || m["T-249"] != "h1" {
		t.Fatalf("Lookup(%v) = %v, %v; want T-0 h2, T-1 and T-249 h1", ids, m, err)
	}
	if m, err := s.Lookup(ctx, "other", ids); err != nil || len(m) != 1 || m["T-0"] != "h1" {
		t.Fatalf("other tenant: Lookup = %v, %v", m, err)
	}
}
