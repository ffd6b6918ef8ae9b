package memstore_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/testing/memstore"
)

// TestJobs_Contract runs one suite against the in-memory job store and
// tablestore's on Azurite: whatever a test learns from the stand-in holds
// for the store.
func TestJobs_Contract(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T, now func() time.Time) batch.JobStore{
		"memstore": func(_ *testing.T, now func() time.Time) batch.JobStore { return memstore.NewJobs(now) },
		"tablestore": func(t *testing.T, now func() time.Time) batch.JobStore {
			svc, table := tables(t, "jobs")
			return tablestore.NewJobs(svc, table, now)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := &clock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
			jobsContract(t, open(t, c.Now), c)
		})
	}
}

// job returns a job of the tenant created at created, in state.
func job(t *testing.T, tenantID string, created time.Time, state batch.State) batch.Job {
	t.Helper()
	id, err := batch.NewJobID(created, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return batch.Job{ID: id, Tenant: tenantID, State: state, Alias: "summarize", Items: 3, Created: created, Updated: created,
		Parts: []batch.Part{{Index: 0, Lines: 3, Status: batch.PartPending}}}
}

// doc is a job's stored content, its ETag aside.
func doc(t *testing.T, j batch.Job) string {
	t.Helper()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ids(jobs []batch.Job) []string {
	out := []string{}
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func jobsContract(t *testing.T, s batch.JobStore, c *clock) {
	ctx := context.Background()
	base := c.Now()

	t.Run("not found", func(t *testing.T) {
		j := job(t, "contoso", base, batch.Accepted)
		for _, id := range []string{j.ID, "not-a-job-id", ""} {
			if _, err := s.Get(ctx, "contoso", id); !errors.Is(err, batch.ErrNotFound) {
				t.Errorf("Get(%q) of no job: %v, want ErrNotFound", id, err)
			}
		}
		j.ETag = `W/"1"`
		if _, err := s.Update(ctx, j); !errors.Is(err, batch.ErrNotFound) {
			t.Errorf("Update of no job: %v, want ErrNotFound", err)
		}
		if _, _, err := s.FindKey(ctx, "contoso", "no-such-key"); !errors.Is(err, batch.ErrNotFound) {
			t.Errorf("FindKey of no key: %v, want ErrNotFound", err)
		}
	})

	t.Run("create, get, conditional update", func(t *testing.T) {
		j := job(t, "contoso", base, batch.Accepted)
		created, err := s.Create(ctx, j, "")
		if err != nil {
			t.Fatal(err)
		}
		if created.ETag == "" || doc(t, created) != doc(t, j) {
			t.Errorf("Create returned %s (ETag %q), want %s with an ETag", doc(t, created), created.ETag, doc(t, j))
		}
		got, err := s.Get(ctx, "contoso", j.ID)
		if err != nil || got.ETag != created.ETag || doc(t, got) != doc(t, j) {
			t.Fatalf("Get = %s (ETag %q), %v; want %s (ETag %q)", doc(t, got), got.ETag, err, doc(t, j), created.ETag)
		}
		if _, err := s.Get(ctx, "fabrikam", j.ID); !errors.Is(err, batch.ErrNotFound) {
			t.Errorf("another tenant's Get: %v, want ErrNotFound", err)
		}
		if _, err := s.Create(ctx, j, ""); err == nil || errors.Is(err, batch.ErrDuplicate) {
			t.Errorf("Create of an existing job: %v, want an error that is not ErrDuplicate", err)
		}

		got.Parts[0].Status = batch.PartSubmitted
		got.State = batch.Submitted
		updated, err := s.Update(ctx, got)
		if err != nil {
			t.Fatal(err)
		}
		if updated.ETag == "" || updated.ETag == got.ETag {
			t.Errorf("Update's ETag %q, want a new one (was %q)", updated.ETag, got.ETag)
		}
		again, err := s.Get(ctx, "contoso", j.ID)
		if err != nil || again.ETag != updated.ETag || again.State != batch.Submitted || again.Parts[0].Status != batch.PartSubmitted {
			t.Errorf("Get after Update = %+v, %v", again, err)
		}
		stale := got
		stale.State = batch.Harvested
		if _, err := s.Update(ctx, stale); !errors.Is(err, batch.ErrConflict) {
			t.Errorf("Update with a stale ETag: %v, want ErrConflict", err)
		}
		if now, _ := s.Get(ctx, "contoso", j.ID); now.State != batch.Submitted {
			t.Errorf("a refused Update changed the job: %s", now.State)
		}
		// What a caller holds is a copy: changing it changes nothing stored.
		again.Parts[0].Lines = 99
		if now, _ := s.Get(ctx, "contoso", j.ID); now.Parts[0].Lines != 3 {
			t.Errorf("the stored job changed with the caller's copy: %d lines", now.Parts[0].Lines)
		}
	})

	t.Run("idempotency keys", func(t *testing.T) {
		first := job(t, "contoso", base, batch.Accepted)
		first.IdempotencyKey = "nightly-2026-12-01"
		if _, err := s.Create(ctx, first, "fp-1"); err != nil {
			t.Fatal(err)
		}
		id, fp, err := s.FindKey(ctx, "contoso", first.IdempotencyKey)
		if err != nil || id != first.ID || fp != "fp-1" {
			t.Errorf("FindKey = %q, %q, %v; want %q, fp-1", id, fp, err, first.ID)
		}
		second := job(t, "contoso", base.Add(time.Second), batch.Accepted)
		second.IdempotencyKey = first.IdempotencyKey
		_, err = s.Create(ctx, second, "fp-2")
		var dup *batch.DuplicateError
		if !errors.As(err, &dup) || !errors.Is(err, batch.ErrDuplicate) || dup.JobID != first.ID || dup.Fingerprint != "fp-1" {
			t.Errorf("Create with a taken key: %v, want a DuplicateError naming %s and fp-1", err, first.ID)
		}
		if _, err := s.Get(ctx, "contoso", second.ID); !errors.Is(err, batch.ErrNotFound) {
			t.Errorf("the refused job was stored: %v", err)
		}
		// Keys are the tenant's own.
		other := job(t, "fabrikam", base, batch.Accepted)
		other.IdempotencyKey = first.IdempotencyKey
		if _, err := s.Create(ctx, other, "fp-3"); err != nil {
			t.Errorf("another tenant's Create with the same key: %v", err)
		}
	})

	t.Run("list and unfinished", func(t *testing.T) {
		// Five jobs a minute apart; ids sort newest first.
		var made []batch.Job
		for k, st := range []batch.State{batch.Accepted, batch.Harvested, batch.Submitted, batch.Harvested, batch.Accepted} {
			j, err := s.Create(ctx, job(t, "northwind", base.Add(time.Duration(k)*time.Minute), st), "")
			if err != nil {
				t.Fatal(err)
			}
			made = append(made, j)
		}
		lit, err := s.Create(ctx, job(t, "litware", base.Add(2*time.Minute), batch.Accepted), "")
		if err != nil {
			t.Fatal(err)
		}
		newestFirst := []string{made[4].ID, made[3].ID, made[2].ID, made[1].ID, made[0].ID}
		all, err := s.List(ctx, "northwind", "", "", 100)
		if err != nil || !equal(ids(all), newestFirst) {
			t.Fatalf("List = %v, %v; want %v", ids(all), err, newestFirst)
		}
		for _, j := range all {
			if got, _ := s.Get(ctx, "northwind", j.ID); j.ETag == "" || j.ETag != got.ETag || doc(t, j) != doc(t, got) {
				t.Errorf("listed job %s (ETag %q) is not what Get reads (ETag %q)", j.ID, j.ETag, got.ETag)
			}
		}
		for _, tc := range []struct {
			state batch.State
			after string
			limit int
			want  []string
		}{
			{"", "", 2, newestFirst[:2]},
			{"", newestFirst[1], 2, newestFirst[2:4]},
			{"", newestFirst[4], 10, []string{}},
			{batch.Harvested, "", 10, []string{made[3].ID, made[1].ID}},
			{batch.Accepted, newestFirst[0], 10, []string{made[0].ID}},
			{"", "", 0, []string{}},
		} {
			got, err := s.List(ctx, "northwind", tc.state, tc.after, tc.limit)
			if err != nil || got == nil || !equal(ids(got), tc.want) {
				t.Errorf("List(state %q, after %q, limit %d) = %v (nil: %v), %v; want %v", tc.state, tc.after, tc.limit, ids(got), got == nil, err, tc.want)
			}
		}
		if got, err := s.List(ctx, "tailspin", "", "", 10); err != nil || got == nil || len(got) != 0 {
			t.Errorf("List of a tenant with no jobs = %v, %v; want empty", got, err)
		}

		un, err := s.Unfinished(ctx, "northwind", made[3].ID, made[0].ID)
		if want := []string{made[2].ID, made[0].ID}; err != nil || !equal(ids(un), want) {
			t.Errorf("Unfinished(%s..%s) = %v, %v; want %v", made[3].ID, made[0].ID, ids(un), err, want)
		}
		for _, j := range un {
			if got, _ := s.Get(ctx, "northwind", j.ID); j.ETag != got.ETag {
				t.Errorf("unfinished job %s has ETag %q, Get reads %q", j.ID, j.ETag, got.ETag)
			}
		}
		if un, err := s.Unfinished(ctx, "northwind", made[4].ID, made[4].ID); err != nil || !equal(ids(un), []string{made[4].ID}) {
			t.Errorf("Unfinished of one job = %v, %v", ids(un), err)
		}
		if un, err := s.Unfinished(ctx, "litware", made[4].ID, made[0].ID); err != nil || !equal(ids(un), []string{lit.ID}) {
			t.Errorf("Unfinished of litware's jobs in the range = %v, %v; want %s alone", ids(un), err, lit.ID)
		}
		if _, err := s.Unfinished(ctx, "northwind", "nope", made[0].ID); err == nil {
			t.Error("Unfinished with an invalid id: no error")
		}
	})

	t.Run("the active index", func(t *testing.T) {
		a, b := job(t, "contoso", base.Add(time.Hour), batch.Accepted), job(t, "fabrikam", base.Add(2*time.Hour), batch.Accepted)
		c.Set(base.Add(time.Minute))
		if err := s.MarkActive(ctx, a.Tenant, a.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkActive(ctx, b.Tenant, b.ID); err != nil {
			t.Fatal(err)
		}
		c.Set(base.Add(2 * time.Minute))
		if err := s.MarkActive(ctx, a.Tenant, a.ID); err != nil { // again: its time moves
			t.Fatal(err)
		}
		refs, err := s.ListActive(ctx)
		want := []batch.ActiveRef{{Tenant: b.Tenant, ID: b.ID, Since: base.Add(time.Minute)}, {Tenant: a.Tenant, ID: a.ID, Since: base.Add(2 * time.Minute)}}
		if err != nil || len(refs) != 2 || !refs[0].Since.Equal(want[0].Since) || !refs[1].Since.Equal(want[1].Since) ||
			refs[0].ID != want[0].ID || refs[1].ID != want[1].ID || refs[0].Tenant != want[0].Tenant || refs[1].Tenant != want[1].Tenant {
			t.Errorf("ListActive = %+v, %v; want %+v (by job id)", refs, err, want)
		}
		if err := s.Unmark(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.Unmark(ctx, a.ID); err != nil {
			t.Errorf("Unmark of an absent entry: %v", err)
		}
		if refs, err := s.ListActive(ctx); err != nil || len(refs) != 1 || refs[0].ID != b.ID {
			t.Errorf("ListActive after Unmark = %+v, %v; want %s alone", refs, err, b.ID)
		}
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
