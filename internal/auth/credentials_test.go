package auth_test

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/tenant"
)

// credentialStore is a Credentials with the changes the suite makes.
type credentialStore struct {
	auth.Credentials
	// add makes an active tenant with one key and app ids; suspend
	// suspends it.
	add     func(t *testing.T, id string, k tenant.Key, apps []string)
	suspend func(t *testing.T, id string)
}

// TestCredentials_Contract runs one suite against the in-memory
// Credentials the authenticator's tests use and tablestore's Tenants on
// Azurite.
func TestCredentials_Contract(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) credentialStore{
		"memory": func(*testing.T) credentialStore {
			m := newMemStore()
			return credentialStore{Credentials: m,
				add:     func(_ *testing.T, id string, k tenant.Key, apps []string) { m.add(id, k, apps...) },
				suspend: func(_ *testing.T, id string) { m.suspend(id) }}
		},
		"tablestore": func(t *testing.T) credentialStore {
			s := newStore(t)
			return credentialStore{Credentials: s,
				add: func(t *testing.T, id string, k tenant.Key, apps []string) {
					tn := tenant.New(id, "Team "+id, k.Created)
					tn.Keys, tn.AppIDs = []tenant.Key{k}, apps
					if err := s.Create(context.Background(), tn); err != nil {
						t.Fatal(err)
					}
				},
				suspend: func(t *testing.T, id string) {
					if _, err := s.Update(context.Background(), id, func(tn *tenant.Tenant) error { tn.State = tenant.Suspended; return nil }); err != nil {
						t.Fatal(err)
					}
				}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			credentialsContract(t, open(t))
		})
	}
}

func credentialsContract(t *testing.T, s credentialStore) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	_, k, err := tenant.NewKey(rand.Reader, now)
	if err != nil {
		t.Fatal(err)
	}
	_, unknown, err := tenant.NewKey(rand.Reader, now)
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := tenant.NewKey(rand.Reader, now)
	if err != nil {
		t.Fatal(err)
	}
	const app, otherApp = "aaaaaaaa-0000-4000-8000-00000000c0de", "aaaaaaaa-0000-4000-8000-00000000beef"
	same := func(got, want tenant.Credential) bool {
		return got.TenantID == want.TenantID && got.State == want.State && got.Key.ID == want.Key.ID &&
			string(got.Key.Salt) == string(want.Key.Salt) && string(got.Key.Hash) == string(want.Key.Hash) &&
			got.Key.Created.Equal(want.Key.Created) && got.Key.Expires.Equal(want.Key.Expires)
	}

	if e, err := s.CredentialEpoch(ctx); err != nil || e != "" {
		t.Errorf("epoch before any tenant = %q, %v; want empty", e, err)
	}
	// Each new tenant moves the epoch: a credential cached as unknown is
	// not trusted past the bound once it exists.
	s.add(t, "contoso", k, []string{app})
	first, err := s.CredentialEpoch(ctx)
	if err != nil || first == "" {
		t.Errorf("epoch after the first tenant = %q, %v; want it moved from empty", first, err)
	}
	if again, err := s.CredentialEpoch(ctx); err != nil || again != first {
		t.Errorf("epoch read again = %q, %v; want %q, unchanged without a change", again, err, first)
	}
	s.add(t, "fabrikam", other, nil)
	before, err := s.CredentialEpoch(ctx)
	if err != nil || before == first {
		t.Errorf("epoch after a second tenant = %q, %v; want it moved from %q", before, err, first)
	}

	if c, err := s.KeyCredential(ctx, k.ID); err != nil || !same(c, tenant.Credential{TenantID: "contoso", State: tenant.Active, Key: k}) {
		t.Errorf("KeyCredential = %+v, %v; want contoso's active key %+v", c, err, k)
	}
	if c, err := s.AppCredential(ctx, app); err != nil || !same(c, tenant.Credential{TenantID: "contoso", State: tenant.Active}) {
		t.Errorf("AppCredential = %+v, %v; want contoso, active, no key", c, err)
	}
	for _, id := range []string{unknown.ID, "not a key id", ""} {
		if _, err := s.KeyCredential(ctx, id); !errors.Is(err, tenant.ErrNotFound) {
			t.Errorf("KeyCredential(%q): %v, want ErrNotFound", id, err)
		}
	}
	for _, id := range []string{otherApp, "not-an-app-id", ""} {
		if _, err := s.AppCredential(ctx, id); !errors.Is(err, tenant.ErrNotFound) {
			t.Errorf("AppCredential(%q): %v, want ErrNotFound", id, err)
		}
	}

	// A change to the tenant reads at once, and moves the epoch.
	s.suspend(t, "contoso")
	if c, err := s.KeyCredential(ctx, k.ID); err != nil || c.State != tenant.Suspended || c.TenantID != "contoso" {
		t.Errorf("KeyCredential after the suspension = %+v, %v; want contoso suspended", c, err)
	}
	if c, err := s.AppCredential(ctx, app); err != nil || c.State != tenant.Suspended {
		t.Errorf("AppCredential after the suspension = %+v, %v; want suspended", c, err)
	}
	if after, err := s.CredentialEpoch(ctx); err != nil || after == before {
		t.Errorf("epoch after the suspension = %q, %v; want it moved from %q", after, err, before)
	}
}
