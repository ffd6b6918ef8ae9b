package auth_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/entra"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/entratest"
)

const (
	appContoso = "aaaaaaaa-0000-4000-8000-000000000001"
	appAcme    = "aaaaaaaa-0000-4000-8000-000000000002"
	appNobody  = "aaaaaaaa-0000-4000-8000-000000000003"
)

func request(headers ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/usage", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	return r
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{now: time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)}
	store := newStore(t)
	contosoKey := seed(t, store, "contoso", clk.Now(), appContoso)
	acmeKey := seed(t, store, "acme", clk.Now(), appAcme)
	if _, err := store.Update(ctx, "acme", func(tn *tenant.Tenant) error { tn.State = tenant.Suspended; return nil }); err != nil {
		t.Fatal(err)
	}
	adminKey, digest, err := auth.NewAdminKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hashes, err := auth.ParseAdminKeyHashes(digest)
	if err != nil {
		t.Fatal(err)
	}
	signer := entratest.New(t, "k1")
	verifier, err := entra.NewVerifier(entra.Options{Issuers: []string{entratest.Issuer}, Audiences: []string{entratest.Audience}, Keys: signer.Keys(), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(auth.Options{Credentials: store, AdminKeyHashes: hashes, Entra: verifier, Now: clk.Now})

	last := "a"
	if strings.HasSuffix(contosoKey, "a") {
		last = "b"
	}
	wrongSecret := contosoKey[:len(contosoKey)-1] + last
	unknownKey, _, err := tenant.NewKey(rand.Reader, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	claims := func(app string, mutate func(map[string]any)) string {
		c := entratest.Claims(app, clk.Now())
		if mutate != nil {
			mutate(c)
		}
		return signer.Token(t, c, nil)
	}
	tests := []struct {
		name    string
		req     *http.Request
		want    auth.Principal
		wantErr error
	}{
		{"valid key, bearer", request("Authorization", "Bearer "+contosoKey), auth.Principal{TenantID: "contoso", Method: auth.APIKey}, nil},
		{"valid key, api-key header", request("api-key", contosoKey), auth.Principal{TenantID: "contoso", Method: auth.APIKey}, nil},
		{"valid key, lowercase scheme", request("Authorization", "bearer "+contosoKey), auth.Principal{TenantID: "contoso", Method: auth.APIKey}, nil},
		{"wrong secret", request("Authorization", "Bearer "+wrongSecret), auth.Principal{}, auth.ErrUnauthenticated},
		{"unknown key", request("Authorization", "Bearer "+unknownKey), auth.Principal{}, auth.ErrUnauthenticated},
		{"malformed key", request("Authorization", "Bearer opk_short"), auth.Principal{}, auth.ErrUnauthenticated},
		{"missing header", request(), auth.Principal{}, auth.ErrUnauthenticated},
		{"empty bearer", request("Authorization", "Bearer "), auth.Principal{}, auth.ErrUnauthenticated},
		{"basic scheme", request("Authorization", "Basic "+contosoKey), auth.Principal{}, auth.ErrUnauthenticated},
		{"two credentials", request("Authorization", "Bearer "+contosoKey, "api-key", contosoKey), auth.Principal{}, auth.ErrUnauthenticated},
		{"two Authorization headers", request("Authorization", "Bearer "+contosoKey, "Authorization", "Bearer "+acmeKey), auth.Principal{}, auth.ErrUnauthenticated},
		{"api-key with a token", request("api-key", claims(appContoso, nil)), auth.Principal{}, auth.ErrUnauthenticated},
		{"suspended tenant's key", request("Authorization", "Bearer "+acmeKey), auth.Principal{}, auth.ErrForbidden},
		{"admin key", request("Authorization", "Bearer "+adminKey), auth.Principal{Admin: true, Method: auth.AdminKey}, nil},
		{"wrong admin key", request("Authorization", "Bearer "+adminKey[:len(adminKey)-2]+"zz"), auth.Principal{}, auth.ErrUnauthenticated},
		{"admin key in api-key header", request("api-key", adminKey), auth.Principal{}, auth.ErrUnauthenticated},
		{"entra valid", request("Authorization", "Bearer "+claims(appContoso, nil)), auth.Principal{TenantID: "contoso", Method: auth.Entra}, nil},
		{"entra expired", request("Authorization", "Bearer "+claims(appContoso, func(c map[string]any) { c["exp"] = clk.Now().Add(-time.Hour).Unix() })), auth.Principal{}, auth.ErrUnauthenticated},
		{"entra wrong audience", request("Authorization", "Bearer "+claims(appContoso, func(c map[string]any) { c["aud"] = "api://other" })), auth.Principal{}, auth.ErrUnauthenticated},
		{"entra unknown app", request("Authorization", "Bearer "+claims(appNobody, nil)), auth.Principal{}, auth.ErrUnauthenticated},
		{"entra suspended tenant", request("Authorization", "Bearer "+claims(appAcme, nil)), auth.Principal{}, auth.ErrForbidden},
		{"entra garbage", request("Authorization", "Bearer not.a.jwt"), auth.Principal{}, auth.ErrUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.Authenticate(ctx, tt.req)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Authenticate() = %+v, %v; want %v", got, err, tt.wantErr)
				}
				for _, secret := range []string{contosoKey, acmeKey, adminKey} {
					if strings.Contains(err.Error(), secret[4:12]) {
						t.Errorf("error %q quotes a credential", err)
					}
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Authenticate() = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestAuthenticate_RotationOverlap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{now: time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)}
	store := newStore(t)
	old := seed(t, store, "contoso", clk.Now())
	a := auth.New(auth.Options{Credentials: store, Now: clk.Now})
	if _, err := a.AuthenticateCredential(ctx, old); err != nil {
		t.Fatalf("before rotation: %v", err)
	}

	var fresh string
	if _, err := store.Update(ctx, "contoso", func(tn *tenant.Tenant) error {
		var err error
		fresh, _, err = tn.RotateKey(rand.Reader, clk.Now(), 24*time.Hour)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	a.Forget()
	for _, step := range []struct {
		after          time.Duration
		oldOK, freshOK bool
	}{
		{0, true, true},                // just rotated: both work
		{23 * time.Hour, true, true},   // during the overlap
		{time.Hour, false, true},       // at the overlap's end the old key stops
		{time.Hour * 100, false, true}, // and stays stopped
	} {
		clk.Add(step.after)
		_, errOld := a.AuthenticateCredential(ctx, old)
		_, errFresh := a.AuthenticateCredential(ctx, fresh)
		if (errOld == nil) != step.oldOK || (errFresh == nil) != step.freshOK {
			t.Errorf("at %v: old key %v, new key %v; want ok %v, %v", clk.Now(), errOld, errFresh, step.oldOK, step.freshOK)
		}
		if errOld != nil && !errors.Is(errOld, auth.ErrUnauthenticated) {
			t.Errorf("expired key: %v, want ErrUnauthenticated", errOld)
		}
	}
}

func TestAuthenticate_CacheTTLAndForget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{now: time.Now()}
	store := newStore(t)
	key := seed(t, store, "contoso", clk.Now())
	a := auth.New(auth.Options{Credentials: store, Now: clk.Now, TTL: 30 * time.Second})
	if _, err := a.AuthenticateCredential(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Update(ctx, "contoso", func(tn *tenant.Tenant) error { tn.State = tenant.Suspended; return nil }); err != nil {
		t.Fatal(err)
	}
	// At the same instant the cached credential still stands (a change
	// made elsewhere takes up to the revocation bound)...
	if _, err := a.AuthenticateCredential(ctx, key); err != nil {
		t.Errorf("at once: %v", err)
	}
	// ...and past the TTL, the suspension applies whatever the epoch says.
	clk.Add(31 * time.Second)
	if _, err := a.AuthenticateCredential(ctx, key); !errors.Is(err, auth.ErrForbidden) || !errors.Is(err, tenant.ErrSuspended) {
		t.Errorf("after TTL: %v, want ErrForbidden", err)
	}
	if _, err := store.Update(ctx, "contoso", func(tn *tenant.Tenant) error { tn.State = tenant.Active; return nil }); err != nil {
		t.Fatal(err)
	}
	a.Forget()
	if _, err := a.AuthenticateCredential(ctx, key); err != nil {
		t.Errorf("after Forget: %v", err)
	}
}

// brokenStore fails every read, as storage does when it is down.
type brokenStore struct{}

func (brokenStore) KeyCredential(context.Context, string) (tenant.Credential, error) {
	return tenant.Credential{}, errors.New("connection refused")
}
func (brokenStore) AppCredential(context.Context, string) (tenant.Credential, error) {
	return tenant.Credential{}, errors.New("connection refused")
}
func (brokenStore) CredentialEpoch(context.Context) (string, error) {
	return "", errors.New("connection refused")
}

func TestAuthenticate_StorageDownIsNeither401Nor403(t *testing.T) {
	t.Parallel()
	key, _, _ := tenant.NewKey(rand.Reader, time.Now())
	a := auth.New(auth.Options{Credentials: brokenStore{}})
	_, err := a.AuthenticateCredential(context.Background(), key)
	if err == nil || errors.Is(err, auth.ErrUnauthenticated) || errors.Is(err, auth.ErrForbidden) {
		t.Errorf("storage down: %v, want a plain (transient) error", err)
	}
	if strings.Contains(err.Error(), key[4:]) {
		t.Errorf("error quotes the key: %v", err)
	}
}

func TestParseAdminKeyHashes(t *testing.T) {
	t.Parallel()
	key, digest, _ := auth.NewAdminKey(rand.Reader)
	_, digest2, _ := auth.NewAdminKey(rand.Reader)
	if h, err := auth.ParseAdminKeyHashes(digest + ", " + digest2); err != nil || len(h) != 2 {
		t.Errorf("two digests: %v, %v", h, err)
	}
	if h, err := auth.ParseAdminKeyHashes(""); err != nil || len(h) != 0 {
		t.Errorf("empty: %v, %v", h, err)
	}
	for _, bad := range []string{key, "abc", digest + "00", ",,"} {
		_, err := auth.ParseAdminKeyHashes(bad)
		if err == nil {
			t.Errorf("ParseAdminKeyHashes(%q): no error", bad)
		} else if strings.Contains(err.Error(), key[4:]) || bytes.Contains([]byte(err.Error()), []byte(digest)) {
			t.Errorf("error quotes the value: %v", err)
		}
	}
}
