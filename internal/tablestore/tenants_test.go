package tablestore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
)

const (
	app1 = "11111111-1111-1111-1111-111111111111"
	app2 = "22222222-2222-2222-2222-222222222222"
)

var t0 = time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)

// newTenant returns a valid tenant with one key, and that key.
func newTenant(t *testing.T, id string, apps ...string) (tenant.Tenant, string) {
	t.Helper()
	tn := tenant.New(id, "Team "+id, t0)
	tn.Aliases = []string{"summarize"}
	tn.AppIDs = apps
	plain, _, err := tn.RotateKey(rand.Reader, t0, tenant.DefaultOverlap)
	if err != nil {
		t.Fatal(err)
	}
	return tn, plain
}

func TestTenants_CreateGetList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTenants(t)
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("List(no table) = %v, %v", list, err)
	}
	a, plain := newTenant(t, "contoso", app1)
	a.MonthlyTokenBudget = 5_000_000
	if err := s.Create(ctx, a); err != nil {
		t.Fatalf("Create: %v", err)
	}
	b, _ := newTenant(t, "acme")
	if err := s.Create(ctx, b); err != nil {
		t.Fatalf("Create: %v", err)
	}
	got, err := s.Get(ctx, "contoso")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "contoso" || got.DisplayName != "Team contoso" || got.MonthlyTokenBudget != 5_000_000 || got.State != tenant.Active ||
		len(got.Aliases) != 1 || len(got.AppIDs) != 1 || len(got.Keys) != 1 || !got.Created.Equal(t0) {
		t.Errorf("Get = %+v", got)
	}
	id, secret, _ := tenant.ParseKey(plain)
	if got.Keys[0].ID != id || !got.Keys[0].Verify(secret) {
		t.Errorf("stored key does not verify its secret")
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "acme" || list[1].ID != "contoso" {
		t.Errorf("List = %+v, %v", list, err)
	}

	c, err := s.KeyCredential(ctx, id)
	if err != nil || c.TenantID != "contoso" || c.State != tenant.Active || !c.Key.Verify(secret) || !c.Key.Expires.IsZero() {
		t.Errorf("KeyCredential = %+v, %v", c, err)
	}
	ac, err := s.AppCredential(ctx, app1)
	if err != nil || ac.TenantID != "contoso" || ac.State != tenant.Active {
		t.Errorf("AppCredential = %+v, %v", ac, err)
	}
}

func TestTenants_CreateConflicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTenants(t)
	a, _ := newTenant(t, "contoso", app1)
	if err := s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	again, _ := newTenant(t, "contoso")
	if err := s.Create(ctx, again); !errors.Is(err, tenant.ErrConflict) {
		t.Errorf("Create(existing) = %v, want ErrConflict", err)
	}
	// An application id maps to one tenant; the failed create leaves nothing.
	b, bKey := newTenant(t, "acme", app2, app1)
	if err := s.Create(ctx, b); !errors.Is(err, tenant.ErrConflict) {
		t.Errorf("Create(app id taken) = %v, want ErrConflict", err)
	}
	if _, err := s.Get(ctx, "acme"); !errors.Is(err, tenant.ErrNotFound) {
		t.Errorf("Get(acme) after failed create = %v, want ErrNotFound", err)
	}
	if _, err := s.AppCredential(ctx, app2); !errors.Is(err, tenant.ErrNotFound) {
		t.Errorf("app2 indexed after failed create: %v", err)
	}
	id, _, _ := tenant.ParseKey(bKey)
	if _, err := s.KeyCredential(ctx, id); !errors.Is(err, tenant.ErrNotFound) {
		t.Errorf("key indexed after failed create: %v", err)
	}
	invalid := tenant.New("Bad/Id", "", t0)
	if err := s.Create(ctx, invalid); !errors.Is(err, tenant.ErrInvalid) {
		t.Errorf("Create(invalid) = %v, want ErrInvalid", err)
	}
}

func TestTenants_LookupsRejectHostileKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTenants(t)
	a, _ := newTenant(t, "contoso")
	if err := s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "x", "contoso/../acme", "contoso'", "' or RowKey ne '", `contoso\`, "contoso#", "contoso?", "con\x00toso", "CONTOSO", "t:contoso"} {
		if _, err := s.Get(ctx, id); !errors.Is(err, tenant.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", id, err)
		}
		if _, err := s.KeyCredential(ctx, id); !errors.Is(err, tenant.ErrNotFound) {
			t.Errorf("KeyCredential(%q) = %v, want ErrNotFound", id, err)
		}
		if _, err := s.AppCredential(ctx, id); !errors.Is(err, tenant.ErrNotFound) {
			t.Errorf("AppCredential(%q) = %v, want ErrNotFound", id, err)
		}
	}
}

func TestTenants_UpdateRotatesSuspendsAndReindexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTenants(t)
	a, first := newTenant(t, "contoso", app1)
	if err := s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	firstID, _, _ := tenant.ParseKey(first)

	var second string
	t1 := t0.Add(time.Hour)
	got, err := s.Update(ctx, "contoso", func(tn *tenant.Tenant) error {
		var err error
		second, _, err = tn.RotateKey(rand.Reader, t1, 24*time.Hour)
		tn.AppIDs = []string{app2}
		tn.State = tenant.Suspended
		return err
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if len(got.Keys) != 2 || got.State != tenant.Suspended {
		t.Errorf("Update returned %+v", got)
	}
	secondID, _, _ := tenant.ParseKey(second)
	c1, err := s.KeyCredential(ctx, firstID)
	if err != nil || !c1.Key.Expires.Equal(t1.Add(24*time.Hour)) || c1.State != tenant.Suspended {
		t.Errorf("old key after rotation = %+v, %v; want expiry and suspended state", c1, err)
	}
	if c2, err := s.KeyCredential(ctx, secondID); err != nil || c2.TenantID != "contoso" || c2.State != tenant.Suspended {
		t.Errorf("new key = %+v, %v", c2, err)
	}
	if _, err := s.AppCredential(ctx, app1); !errors.Is(err, tenant.ErrNotFound) {
		t.Errorf("removed app id still indexed: %v", err)
	}
	if c, err := s.AppCredential(ctx, app2); err != nil || c.State != tenant.Suspended {
		t.Errorf("added app id = %+v, %v", c, err)
	}

	// Revoking the old key removes its index row.
	if _, err := s.Update(ctx, "contoso", func(tn *tenant.Tenant) error { return tn.RevokeKey(firstID, t1) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.KeyCredential(ctx, firstID); !errors.Is(err, tenant.ErrNotFound) {
		t.Errorf("revoked key still indexed: %v", err)
	}

	// A change that fails writes nothing; an unknown tenant is not found;
	// the id cannot change.
	boom := errors.New("no")
	if _, err := s.Update(ctx, "contoso", func(tn *tenant.Tenant) error { tn.DisplayName = "changed"; return boom }); !errors.Is(err, boom) {
		t.Errorf("Update(failing change) = %v", err)
	}
	if g, _ := s.Get(ctx, "contoso"); g.DisplayName == "changed" {
		t.Error("a failed change was written")
	}
	if _, err := s.Update(ctx, "nobody", func(*tenant.Tenant) error { return nil }); !errors.Is(err, tenant.ErrNotFound) {
		t.Errorf("Update(unknown) = %v", err)
	}
	if _, err := s.Update(ctx, "contoso", func(tn *tenant.Tenant) error { tn.ID = "acme"; return nil }); !errors.Is(err, tenant.ErrInvalid) {
		t.Errorf("Update(rename) = %v", err)
	}
}

func TestTenants_UpdateAppIDConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTenants(t)
	a, _ := newTenant(t, "contoso", app1)
	b, _ := newTenant(t, "acme")
	for _, tn := range []tenant.Tenant{a, b} {
		if err := s.Create(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Update(ctx, "acme", func(tn *tenant.Tenant) error { tn.AppIDs = []string{app1}; tn.DisplayName = "x"; return nil })
	if !errors.Is(err, tenant.ErrConflict) {
		t.Fatalf("Update(taking another tenant's app id) = %v, want ErrConflict", err)
	}
	if c, err := s.AppCredential(ctx, app1); err != nil || c.TenantID != "contoso" {
		t.Errorf("app id moved: %+v, %v", c, err)
	}
	if g, _ := s.Get(ctx, "acme"); g.DisplayName == "x" {
		t.Error("the failed transaction was partly written")
	}
}

// Concurrent updates each win exactly once: none is lost to another.
func TestTenants_ConcurrentUpdates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTenants(t)
	a, _ := newTenant(t, "contoso")
	a.Aliases = nil
	if err := s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	const n = 4
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Update(ctx, "contoso", func(tn *tenant.Tenant) error {
				tn.Aliases = append(tn.Aliases, fmt.Sprintf("alias-%d", i))
				return nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	conflicts := 0
	for err := range errs {
		if errors.Is(err, tenant.ErrConflict) {
			conflicts++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Get(ctx, "contoso")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Aliases) != n-conflicts {
		t.Errorf("aliases after %d concurrent updates (%d gave up): %v", n, conflicts, got.Aliases)
	}
}

// TestTenants_CredentialEpoch: every change to a tenant, by any client of
// the table, moves the epoch; reads and refused changes do not.
func TestTenants_CredentialEpoch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := tableName(t, "ten")
	s := tablestore.NewTenants(service(t), name)
	epoch := func() string {
		t.Helper()
		e, err := s.CredentialEpoch(ctx)
		if err != nil {
			t.Fatalf("CredentialEpoch: %v", err)
		}
		return e
	}
	if e := epoch(); e != "" {
		t.Errorf("CredentialEpoch(no table) = %q, want empty", e)
	}
	a, _ := newTenant(t, "contoso", app1)
	if err := s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	created := epoch()
	if created == "" {
		t.Fatal("CredentialEpoch after Create is empty")
	}
	if _, err := s.Get(ctx, "contoso"); err != nil {
		t.Fatal(err)
	}
	if e := epoch(); e != created {
		t.Errorf("a read moved the epoch: %q → %q", created, e)
	}
	b, _ := newTenant(t, "acme", app1) // app1 is contoso's: refused
	if err := s.Create(ctx, b); !errors.Is(err, tenant.ErrConflict) {
		t.Fatalf("Create(conflicting app id) = %v", err)
	}
	if e := epoch(); e != created {
		t.Errorf("a refused Create moved the epoch: %q → %q", created, e)
	}
	prev := created
	for _, change := range []struct {
		name string
		f    func(*tenant.Tenant) error
	}{
		{"suspend", func(tn *tenant.Tenant) error { tn.State = tenant.Suspended; return nil }},
		{"revoke the key", func(tn *tenant.Tenant) error { return tn.RevokeKey(tn.Keys[0].ID, t0) }},
		{"unmap the app", func(tn *tenant.Tenant) error { tn.AppIDs = nil; return nil }},
	} {
		if _, err := s.Update(ctx, "contoso", change.f); err != nil {
			t.Fatalf("%s: %v", change.name, err)
		}
		e := epoch()
		if e == prev || e == "" {
			t.Errorf("%s did not move the epoch (%q)", change.name, e)
		}
		prev = e
	}
	// Another client of the same table sees the same epoch.
	other := tablestore.NewTenants(service(t), name)
	if e, err := other.CredentialEpoch(ctx); err != nil || e != prev {
		t.Errorf("another client: CredentialEpoch = %q, %v; want %q", e, err, prev)
	}
}
