package auth_test

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/entra"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/entratest"
)

// TestAuthenticate_RevocationReachesEveryInstance: a change made through
// Table Storage by someone else (the CLI, another instance) is enforced
// by an instance that had the credential cached once the revocation bound
// has passed, not the cache's lifetime later.
func TestAuthenticate_RevocationReachesEveryInstance(t *testing.T) {
	t.Parallel()
	const bound = 5 * time.Second
	signer := entratest.New(t, "k1")
	tests := []struct {
		name   string
		change func(*tenant.Tenant) error
		// after is what the key and the Entra token get once it applies.
		keyErr, tokenErr error
	}{
		{"key revoked", func(tn *tenant.Tenant) error { return tn.RevokeKey(tn.Keys[0].ID, tn.Updated) }, auth.ErrUnauthenticated, nil},
		{"rotation's overlap ended", func(tn *tenant.Tenant) error {
			_, _, err := tn.RotateKey(rand.Reader, tn.Updated, 0)
			return err
		}, auth.ErrUnauthenticated, nil},
		{"tenant suspended", func(tn *tenant.Tenant) error { tn.State = tenant.Suspended; return nil }, auth.ErrForbidden, auth.ErrForbidden},
		{"application unmapped", func(tn *tenant.Tenant) error { tn.AppIDs = nil; return nil }, nil, auth.ErrUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clk := &clock{now: time.Now().UTC()}
			name := tableName()
			operator := tenantsOn(t, name) // the CLI
			key := seed(t, operator, "contoso", clk.Now(), appContoso)
			verifier, err := entra.NewVerifier(entra.Options{Issuers: []string{entratest.Issuer}, Audiences: []string{entratest.Audience},
				Keys: signer.Keys(), Now: clk.Now, AppOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			token := signer.Token(t, entratest.Claims(appContoso, clk.Now()), nil)
			// Two instances, each with its own client of the table, as two
			// handler processes have.
			var instances []*auth.Authenticator
			for range 2 {
				instances = append(instances, auth.New(auth.Options{Credentials: tenantsOn(t, name), Entra: verifier,
					RevocationBound: bound, TTL: 10 * time.Minute, Now: clk.Now}))
			}
			for i, a := range instances {
				for _, cred := range []string{key, token} {
					if _, err := a.AuthenticateCredential(ctx, cred); err != nil {
						t.Fatalf("instance %d before the change: %v", i, err)
					}
				}
			}

			if _, err := operator.Update(ctx, "contoso", tt.change); err != nil {
				t.Fatal(err)
			}
			clk.Add(bound)
			for i, a := range instances {
				_, errKey := a.AuthenticateCredential(ctx, key)
				_, errToken := a.AuthenticateCredential(ctx, token)
				if !matches(errKey, tt.keyErr) || !matches(errToken, tt.tokenErr) {
					t.Errorf("instance %d, %v after the change: key %v, token %v; want %v, %v", i, bound, errKey, errToken, tt.keyErr, tt.tokenErr)
				}
			}
		})
	}
}

// TestAuthenticate_ReactivationAndNewKeysReachEveryInstance: the other
// direction, a suspended tenant reactivated and a key made elsewhere,
// works within the bound too (unknown ids are not remembered past it).
func TestAuthenticate_ReactivationAndNewKeysReachEveryInstance(t *testing.T) {
	t.Parallel()
	const bound = 5 * time.Second
	ctx := context.Background()
	clk := &clock{now: time.Now().UTC()}
	name := tableName()
	operator := tenantsOn(t, name)
	key := seed(t, operator, "contoso", clk.Now())
	a := auth.New(auth.Options{Credentials: tenantsOn(t, name), RevocationBound: bound, NegativeTTL: time.Minute, TTL: 10 * time.Minute, Now: clk.Now})
	if _, err := operator.Update(ctx, "contoso", func(tn *tenant.Tenant) error { tn.State = tenant.Suspended; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AuthenticateCredential(ctx, key); !errors.Is(err, auth.ErrForbidden) {
		t.Fatalf("suspended: %v", err)
	}
	plain, k, err := tenant.NewKey(rand.Reader, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AuthenticateCredential(ctx, plain); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("a key not yet stored: %v", err)
	}
	if _, err := operator.Update(ctx, "contoso", func(tn *tenant.Tenant) error {
		tn.State, tn.Keys = tenant.Active, append(tn.Keys, k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	clk.Add(bound)
	for _, cred := range []string{key, plain} {
		if _, err := a.AuthenticateCredential(ctx, cred); err != nil {
			t.Errorf("after reactivation and a new key: %v", err)
		}
	}
}

func matches(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}

// tenantsOn is a new client of the named tenants table.
func tenantsOn(tb testing.TB, name string) *tablestore.Tenants {
	tb.Helper()
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: shared.Get(tb).ConnectionString()})
	if err != nil {
		tb.Fatal(err)
	}
	return tablestore.NewTenants(svc, name)
}
