package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
)

// TestStatuses_Contract runs one suite against the flow tests' in-memory
// statuses and tablestore's Documents on Azurite.
func TestStatuses_Contract(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return at }
	for name, open := range map[string]func(t *testing.T) ingest.Statuses{
		"memory": func(*testing.T) ingest.Statuses { return &memStatuses{now: now} },
		"tablestore": func(t *testing.T) ingest.Statuses {
			return tablestore.NewDocuments(tables(t), tableName("docs"), now)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			statusesContract(t, open(t), at)
		})
	}
}

// content is a status as stored, its version aside.
func content(t *testing.T, st document.Status) string {
	t.Helper()
	st.Version = ""
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func statusesContract(t *testing.T, s ingest.Statuses, at time.Time) {
	ctx := context.Background()
	const name = "acme/reports/q1.txt"
	if _, err := s.Get(ctx, "acme", name); !errors.Is(err, document.ErrNotFound) {
		t.Errorf("Get of no status: %v, want ErrNotFound", err)
	}

	st := document.Status{Tenant: "acme", Name: name, ETag: "0x8D1", Size: 2048, State: document.Queued, Deliveries: 1,
		Enqueued: at.Add(-time.Minute)}
	put, err := s.Put(ctx, name, st)
	if err != nil {
		t.Fatal(err)
	}
	want := st
	want.Updated = at // the store stamps it
	if put.Version == "" || content(t, put) != content(t, want) {
		t.Errorf("Put = %s (version %q), want %s with a version", content(t, put), put.Version, content(t, want))
	}
	got, err := s.Get(ctx, "acme", name)
	if err != nil || got.Version != put.Version || content(t, got) != content(t, want) {
		t.Errorf("Get = %s (version %q), %v; want what Put returned", content(t, got), got.Version, err)
	}
	if _, err := s.Get(ctx, "other", name); !errors.Is(err, document.ErrNotFound) {
		t.Errorf("Get in another tenant's partition: %v, want ErrNotFound", err)
	}
	again := st
	again.State = document.Processing
	replaced, err := s.Put(ctx, name, again)
	if err != nil || replaced.Version == put.Version {
		t.Errorf("Put again: version %q, %v; want a new version (was %q)", replaced.Version, err, put.Version)
	}

	// A status without a tenant is in the unattributed partition.
	stray := document.Status{Name: "no-tenant.txt", State: document.Rejected, Reason: "no tenant folder"}
	if _, err := s.Put(ctx, stray.Name, stray); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, document.Unattributed, stray.Name); err != nil || got.Reason != stray.Reason {
		t.Errorf("Get of the unattributed status = %+v, %v", got, err)
	}

	// Update: change sees nothing (found false) for no status, and a
	// declined change writes nothing.
	missing := "acme/none.txt"
	if _, err := s.Update(ctx, "acme", missing, func(st *document.Status, found bool) (bool, error) {
		if found || st.Name != "" {
			t.Errorf("change saw found %v, %+v for no status", found, st)
		}
		return false, nil
	}); err != nil {
		t.Errorf("a declined Update: %v", err)
	}
	if _, err := s.Get(ctx, "acme", missing); !errors.Is(err, document.ErrNotFound) {
		t.Errorf("a declined Update wrote a status: %v", err)
	}
	refusal := errors.New("no")
	if _, err := s.Update(ctx, "acme", name, func(*document.Status, bool) (bool, error) { return true, refusal }); !errors.Is(err, refusal) {
		t.Errorf("Update whose change fails: %v, want its error", err)
	}
	// A status moved to another tenant's partition is refused.
	if _, err := s.Update(ctx, "acme", name, func(st *document.Status, _ bool) (bool, error) {
		st.Tenant = "other"
		return true, nil
	}); err == nil {
		t.Error("Update that moves a status to another tenant: no error")
	}
	// Concurrent updates each apply once.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := s.Update(ctx, "acme", name, func(st *document.Status, found bool) (bool, error) {
				st.Deliveries++
				return found, nil
			}); err != nil {
				t.Errorf("concurrent Update: %v", err)
			}
		})
	}
	wg.Wait()
	if got, err := s.Get(ctx, "acme", name); err != nil || got.Deliveries != 5 || got.State != document.Processing {
		t.Errorf("after four concurrent updates: %+v, %v; want 5 deliveries, processing", got, err)
	}
}

// TestTenants_Contract: the flow tests' in-memory tenants read as
// tablestore's Tenants do.
func TestTenants_Contract(t *testing.T) {
	t.Parallel()
	acme := tenant.New("acme", "Acme", time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	acme.Aliases = []string{"ingest"}
	for name, open := range map[string]func(t *testing.T) ingest.Tenants{
		"memory": func(*testing.T) ingest.Tenants { return &memTenants{m: map[string]tenant.Tenant{"acme": acme}} },
		"tablestore": func(t *testing.T) ingest.Tenants {
			s := tablestore.NewTenants(tables(t), tableName("tenants"))
			if err := s.Create(context.Background(), acme); err != nil {
				t.Fatal(err)
			}
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t)
			got, err := s.Get(ctx, "acme")
			if err != nil || got.ID != acme.ID || got.State != tenant.Active || !slices.Equal(got.Aliases, acme.Aliases) || !got.Created.Equal(acme.Created) {
				t.Errorf("Get = %+v, %v; want %+v", got, err, acme)
			}
			for _, id := range []string{"nobody", "Not A Tenant Id", ""} {
				if _, err := s.Get(ctx, id); !errors.Is(err, tenant.ErrNotFound) {
					t.Errorf("Get(%q): %v, want ErrNotFound", id, err)
				}
			}
		})
	}
}
