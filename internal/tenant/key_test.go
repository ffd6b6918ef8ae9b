package tenant_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/tenant"
)

func TestNewKey_RoundTrip(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	plain, k, err := tenant.NewKey(rand.Reader, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain) != tenant.KeyLen || !strings.HasPrefix(plain, "opk_") {
		t.Fatalf("NewKey() = %q (len %d), want opk_ and %d characters", plain, len(plain), tenant.KeyLen)
	}
	id, secret, ok := tenant.ParseKey(plain)
	if !ok || id != k.ID {
		t.Fatalf("ParseKey(%q) = %q, %v; want id %q", plain, id, ok, k.ID)
	}
	if bytes.Contains(k.Hash, []byte(secret)) || bytes.Contains(k.Salt, []byte(secret)) || len(k.Hash) != 32 || len(k.Salt) != 16 {
		t.Fatalf("stored key holds the secret or has wrong sizes: %+v", k)
	}
	if !k.Verify(secret) {
		t.Error("Verify(secret) = false")
	}
	wrong := []byte(secret)
	wrong[len(wrong)-1] ^= 1
	if k.Verify(string(wrong)) || k.Verify("") || k.Verify(secret+"a") {
		t.Error("Verify accepted a wrong secret")
	}
	_, k2, _ := tenant.NewKey(rand.Reader, now)
	if k2.ID == k.ID || bytes.Equal(k2.Salt, k.Salt) {
		t.Error("two keys share an id or salt")
	}
	var zero tenant.Key
	if zero.Verify(secret) {
		t.Error("zero Key verified a secret")
	}
}

func TestParseKey_Rejects(t *testing.T) {
	t.Parallel()
	plain, _, err := tenant.NewKey(rand.Reader, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]string{
		"empty":        "",
		"no prefix":    "xpk_" + plain[4:],
		"short":        plain[:len(plain)-1],
		"long":         plain + "a",
		"uppercase":    strings.ToUpper(plain),
		"bad char":     plain[:20] + "/" + plain[21:],
		"no separator": plain[:20] + "a" + plain[21:],
		"jwt":          "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
		"admin prefix": "opa_" + plain[4:],
	} {
		if _, _, ok := tenant.ParseKey(in); ok {
			t.Errorf("ParseKey(%s %q) = ok", name, in)
		}
	}
}

func TestTenant_RotateKey(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	tn := tenant.New("contoso", "", t0)
	_, first, err := tn.RotateKey(rand.Reader, t0, tenant.DefaultOverlap)
	if err != nil {
		t.Fatal(err)
	}
	if len(tn.Keys) != 1 || !tn.Keys[0].Expires.IsZero() {
		t.Fatalf("first key: %+v", tn.Keys)
	}

	t1 := t0.Add(time.Hour)
	_, second, err := tn.RotateKey(rand.Reader, t1, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(tn.Keys) != 2 || tn.Keys[0].ID != first.ID || !tn.Keys[0].Expires.Equal(t1.Add(24*time.Hour)) || tn.Keys[1].ID != second.ID || !tn.Keys[1].Expires.IsZero() {
		t.Fatalf("after rotation: %+v", tn.Keys)
	}
	if !tn.Keys[0].ActiveAt(t1.Add(23*time.Hour)) || tn.Keys[0].ActiveAt(t1.Add(24*time.Hour)) {
		t.Error("old key's overlap window is wrong")
	}

	// A second rotation with a longer overlap never extends an old key.
	t2 := t1.Add(time.Hour)
	if _, _, err := tn.RotateKey(rand.Reader, t2, 72*time.Hour); err != nil {
		t.Fatal(err)
	}
	if !tn.Keys[0].Expires.Equal(t1.Add(24*time.Hour)) || !tn.Keys[1].Expires.Equal(t2.Add(72*time.Hour)) {
		t.Errorf("after second rotation: %+v", tn.Keys)
	}

	// Expired keys are dropped; overlap zero revokes the others at once.
	t3 := t1.Add(25 * time.Hour)
	_, last, err := tn.RotateKey(rand.Reader, t3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tn.Keys) != 1 || tn.Keys[0].ID != last.ID {
		t.Errorf("after rotation with no overlap: %+v", tn.Keys)
	}
	if _, _, err := tn.RotateKey(rand.Reader, t3, -time.Second); !errors.Is(err, tenant.ErrInvalid) {
		t.Errorf("negative overlap: %v", err)
	}
}

func TestTenant_RotateKey_Limit(t *testing.T) {
	t.Parallel()
	now := time.Now()
	tn := tenant.New("contoso", "", now)
	for i := range tenant.MaxKeys {
		if _, _, err := tn.RotateKey(rand.Reader, now, time.Hour); err != nil {
			t.Fatalf("rotation %d: %v", i, err)
		}
	}
	if _, _, err := tn.RotateKey(rand.Reader, now, time.Hour); !errors.Is(err, tenant.ErrInvalid) {
		t.Errorf("rotation past MaxKeys = %v, want ErrInvalid", err)
	}
}

func TestTenant_RevokeAndPrune(t *testing.T) {
	t.Parallel()
	now := time.Now()
	tn := tenant.New("contoso", "", now)
	_, a, _ := tn.RotateKey(rand.Reader, now, 0)
	_, b, _ := tn.RotateKey(rand.Reader, now, time.Minute)
	if err := tn.RevokeKey(b.ID, now); err != nil || len(tn.Keys) != 1 || tn.Keys[0].ID != a.ID {
		t.Fatalf("RevokeKey: %v, keys %+v", err, tn.Keys)
	}
	if err := tn.RevokeKey(b.ID, now); !errors.Is(err, tenant.ErrNotFound) {
		t.Errorf("RevokeKey(again) = %v, want ErrNotFound", err)
	}
	tn.Prune(now.Add(2 * time.Minute))
	if len(tn.Keys) != 0 {
		t.Errorf("Prune left %+v", tn.Keys)
	}
}
