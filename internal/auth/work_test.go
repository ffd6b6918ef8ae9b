package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/tenant"
)

// oneKey is a Credentials holding one API key.
type oneKey struct{ cred tenant.Credential }

func (o oneKey) KeyCredential(_ context.Context, id string) (tenant.Credential, error) {
	if id == o.cred.Key.ID {
		return o.cred, nil
	}
	return tenant.Credential{}, tenant.ErrNotFound
}
func (oneKey) AppCredential(context.Context, string) (tenant.Credential, error) {
	return tenant.Credential{}, tenant.ErrNotFound
}
func (oneKey) CredentialEpoch(context.Context) (string, error) { return "", nil }

// TestAuthenticate_UnknownIDCostsAsMuchAsAWrongSecret: the answer to an
// unknown key id checks the presented secret against a real key (salt and
// 32-byte hash), once, as the answer to a wrong secret does, whether the
// answer comes from storage or from the cache.
func TestAuthenticate_UnknownIDCostsAsMuchAsAWrongSecret(t *testing.T) {
	t.Parallel()
	now := time.Now()
	plain, k, err := tenant.NewKey(rand.Reader, now)
	if err != nil {
		t.Fatal(err)
	}
	unknown, _, err := tenant.NewKey(rand.Reader, now)
	if err != nil {
		t.Fatal(err)
	}
	wrong := plain[:len(plain)-1] + map[bool]string{true: "b", false: "a"}[plain[len(plain)-1] == 'a']
	a := New(Options{Credentials: oneKey{tenant.Credential{TenantID: "contoso", State: tenant.Active, Key: k}}, Now: func() time.Time { return now }})
	var checks []tenant.Key
	a.verify = func(k *tenant.Key, secret string) bool {
		checks = append(checks, *k)
		return k.Verify(secret)
	}
	for _, cred := range []string{wrong, unknown, wrong, unknown} { // from storage, then from the cache
		checks = checks[:0]
		if _, err := a.AuthenticateCredential(context.Background(), cred); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("AuthenticateCredential = %v", err)
		}
		if len(checks) != 1 || len(checks[0].Salt) != 16 || len(checks[0].Hash) != sha256.Size {
			t.Errorf("secret checks = %+v, want one against a real key", checks)
		}
	}
}
