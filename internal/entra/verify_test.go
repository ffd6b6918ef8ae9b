package entra_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/entra"
	"github.com/offpath/offpath/internal/entra/entratest"
)

const app = "0b5e2a3c-1111-2222-3333-444455556666"

func TestVerifier_Verify(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	signer := entratest.New(t, "k1")
	other := entratest.New(t, "k1") // same kid, different key: a forgery
	v, err := entra.NewVerifier(entra.Options{
		Issuers: []string{entratest.Issuer, "https://sts.windows.net/" + entratest.DirectoryID + "/"}, Audiences: []string{entratest.Audience},
		Keys: signer.Keys(), Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	with := func(mutate func(map[string]any)) map[string]any {
		c := entratest.Claims(app, now)
		mutate(c)
		return c
	}
	tests := []struct {
		name    string
		token   string
		wantErr string
	}{
		{"valid v2", signer.Token(t, entratest.Claims(app, now), nil), ""},
		{"valid v1 appid", signer.Token(t, with(func(c map[string]any) {
			delete(c, "azp")
			c["appid"], c["iss"] = app, "https://sts.windows.net/"+entratest.DirectoryID+"/"
		}), nil), ""},
		{"audience in a list", signer.Token(t, with(func(c map[string]any) { c["aud"] = []string{"other", entratest.Audience} }), nil), ""},
		{"expired within leeway", signer.Token(t, with(func(c map[string]any) { c["exp"] = now.Add(-10 * time.Second).Unix() }), nil), ""},
		{"expired", signer.Token(t, with(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() }), nil), "expired"},
		{"not yet valid", signer.Token(t, with(func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() }), nil), "not valid before"},
		{"no exp", signer.Token(t, with(func(c map[string]any) { delete(c, "exp") }), nil), "exp missing"},
		{"wrong audience", signer.Token(t, with(func(c map[string]any) { c["aud"] = "api://someone-else" }), nil), "audience"},
		{"no audience", signer.Token(t, with(func(c map[string]any) { delete(c, "aud") }), nil), "aud missing"},
		{"wrong issuer", signer.Token(t, with(func(c map[string]any) { c["iss"] = "https://evil.example/v2.0" }), nil), "issuer"},
		{"no app", signer.Token(t, with(func(c map[string]any) { delete(c, "azp") }), nil), "no azp or appid"},
		{"forged signature", other.Token(t, entratest.Claims(app, now), nil), "bad signature"},
		{"unknown kid", signer.Token(t, entratest.Claims(app, now), map[string]any{"kid": "k2"}), "unknown signing key"},
		{"no kid", signer.Token(t, entratest.Claims(app, now), map[string]any{"kid": ""}), "no kid"},
		{"alg none", signer.Token(t, entratest.Claims(app, now), map[string]any{"alg": "none"}), "not RS256"},
		{"alg HS256", signer.Token(t, entratest.Claims(app, now), map[string]any{"alg": "HS256"}), "not RS256"},
		{"two parts", "eyJhbGciOiJSUzI1NiJ9.eyJ9", "three"},
		{"four parts", "a.b.c.d", "three"},
		{"garbage", "!!!.???.***", "header"},
		{"huge", strings.Repeat("a", entra.MaxTokenLen+1), "longer than"},
	}
	tampered := signer.Token(t, entratest.Claims(app, now), nil)
	parts := strings.Split(tampered, ".")
	evil := signer.Token(t, entratest.Claims("99999999-9999-9999-9999-999999999999", now), nil)
	tests = append(tests, struct{ name, token, wantErr string }{"claims swapped", parts[0] + "." + strings.Split(evil, ".")[1] + "." + parts[2], "bad signature"})

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := v.Verify(context.Background(), tt.token)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Verify() = %v", err)
				}
				if c.AppID != app || c.Audience != entratest.Audience || c.TenantID != entratest.DirectoryID {
					t.Errorf("claims = %+v", c)
				}
				return
			}
			if !errors.Is(err, entra.ErrInvalidToken) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Verify() = %v, want ErrInvalidToken with %q", err, tt.wantErr)
			}
			if len(tt.token) > 20 && strings.Contains(err.Error(), tt.token[len(tt.token)-20:]) {
				t.Errorf("error quotes the token: %v", err)
			}
		})
	}
}

func TestJWKS_FetchesAndRollsOver(t *testing.T) {
	t.Parallel()
	now := time.Now()
	k1, k2 := entratest.New(t, "k1"), entratest.New(t, "k2")
	var published atomic.Pointer[[]byte]
	doc := entratest.JWKS(k1)
	published.Store(&doc)
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		_, _ = w.Write(*published.Load())
	}))
	defer srv.Close()
	v, err := entra.NewVerifier(entra.Options{Issuers: []string{entratest.Issuer}, Audiences: []string{entratest.Audience}, Keys: entra.NewJWKS(srv.URL, nil)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 3 {
		if _, err := v.Verify(ctx, k1.Token(t, entratest.Claims(app, now), nil)); err != nil {
			t.Fatalf("Verify(k1) = %v", err)
		}
	}
	if fetches.Load() != 1 {
		t.Errorf("fetched the keys %d times for three tokens, want once", fetches.Load())
	}
	// The issuer rolls over to k2: a token with an unknown kid triggers one refetch.
	doc2 := entratest.JWKS(k1, k2)
	published.Store(&doc2)
	// The refetch is rate-limited to once per five minutes; the first fetch
	// just happened, so this token waits.
	if _, err := v.Verify(ctx, k2.Token(t, entratest.Claims(app, now), nil)); !errors.Is(err, entra.ErrInvalidToken) {
		t.Errorf("Verify(k2) right after a fetch = %v, want unknown key", err)
	}
}

func TestJWKS_RefetchesUnknownKid(t *testing.T) {
	t.Parallel()
	k1, k2 := entratest.New(t, "k1"), entratest.New(t, "k2")
	url := entratest.Serve(t, k1, k2)
	keys := entra.NewJWKS(url, nil)
	if _, err := keys.Key(context.Background(), "k2"); err != nil {
		t.Fatalf("Key(k2) = %v", err)
	}
	if _, err := keys.Key(context.Background(), "k3"); !errors.Is(err, entra.ErrInvalidToken) {
		t.Errorf("Key(k3) = %v, want unknown key", err)
	}
}

func TestJWKS_Unreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := entra.NewJWKS(url, nil).Key(context.Background(), "k1")
	if !errors.Is(err, entra.ErrKeysUnavailable) || errors.Is(err, entra.ErrInvalidToken) {
		t.Errorf("Key(unreachable) = %v, want ErrKeysUnavailable", err)
	}
}

func TestParseRSAKey_RejectsSmallKeys(t *testing.T) {
	t.Parallel()
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	s := &entratest.Signer{Kid: "small", Key: small}
	url := entratest.Serve(t, s)
	if _, err := entra.NewJWKS(url, nil).Key(context.Background(), "small"); !errors.Is(err, entra.ErrInvalidToken) {
		t.Errorf("Key(1024-bit) = %v, want it ignored", err)
	}
}

func TestNewVerifier_RequiresEverything(t *testing.T) {
	t.Parallel()
	if _, err := entra.NewVerifier(entra.Options{Issuers: []string{"x"}, Keys: entra.StaticKeys{}}); err == nil {
		t.Error("NewVerifier without audiences: no error")
	}
}
