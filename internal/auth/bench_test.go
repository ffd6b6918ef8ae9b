package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/entra"
	"github.com/offpath/offpath/internal/testing/entratest"
)

const benchApp = "bbbbbbbb-0000-4000-8000-000000000001"

func benchSetup(b *testing.B) (*auth.Authenticator, string, string) {
	b.Helper()
	store := newStore(b)
	key := seed(b, store, "contoso", time.Now(), benchApp)
	signer := entratest.New(b, "k1")
	v, err := entra.NewVerifier(entra.Options{Issuers: []string{entratest.Issuer}, Audiences: []string{entratest.Audience}, Keys: signer.Keys()})
	if err != nil {
		b.Fatal(err)
	}
	token := signer.Token(b, entratest.Claims(benchApp, time.Now()), nil)
	return auth.New(auth.Options{Credentials: store, Entra: v}), key, token
}

// BenchmarkAuthenticate_Warm is a request with an API key whose credential
// is cached: header parsing, a map lookup and one HMAC-SHA256.
func BenchmarkAuthenticate_Warm(b *testing.B) {
	a, key, _ := benchSetup(b)
	r := request("Authorization", "Bearer "+key)
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticate_WarmParallel is the same from all CPUs at once.
func BenchmarkAuthenticate_WarmParallel(b *testing.B) {
	a, key, _ := benchSetup(b)
	r := request("Authorization", "Bearer "+key)
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := a.Authenticate(ctx, r); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkAuthenticate_Cold is a request whose credential is not cached:
// one point read of Table Storage (Azurite here) dominates.
func BenchmarkAuthenticate_Cold(b *testing.B) {
	a, key, _ := benchSetup(b)
	r := request("Authorization", "Bearer "+key)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a.Forget()
		if _, err := a.Authenticate(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticate_EntraWarm is a request with an Entra ID token seen
// before: a SHA-256 of the token and two map lookups.
func BenchmarkAuthenticate_EntraWarm(b *testing.B) {
	a, _, token := benchSetup(b)
	r := request("Authorization", "Bearer "+token)
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticate_EntraCold verifies the RS256 signature and reads
// the application's credential.
func BenchmarkAuthenticate_EntraCold(b *testing.B) {
	a, _, token := benchSetup(b)
	r := request("Authorization", "Bearer "+token)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a.Forget()
		if _, err := a.Authenticate(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticate_WrongSecret and BenchmarkAuthenticate_UnknownKey
// answer a refused API key from the cache: the same HMAC either way, so
// the two figures should match.
func BenchmarkAuthenticate_WrongSecret(b *testing.B) {
	a, key, _ := benchSetup(b)
	last := map[bool]string{true: "b", false: "a"}[key[len(key)-1] == 'a']
	benchRefused(b, a, key[:len(key)-1]+last)
}

func BenchmarkAuthenticate_UnknownKey(b *testing.B) {
	a, _, _ := benchSetup(b)
	benchRefused(b, a, randomKey(b))
}

func benchRefused(b *testing.B, a *auth.Authenticator, key string) {
	r := request("Authorization", "Bearer "+key)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(ctx, r); err == nil {
			b.Fatal("accepted")
		}
	}
}
