package auth_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/entra"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/entratest"
)

// randomKey is a well-formed API key with a random id nobody holds.
func randomKey(tb testing.TB) string {
	tb.Helper()
	plain, _, err := tenant.NewKey(rand.Reader, time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	return plain
}

// TestAuthenticate_FloodOfUnknownKeyIDsKeepsValidKeysCached: 10,000 made-up
// key ids, from as many addresses, neither push the genuine credentials
// out of the cache nor cost more than one read each.
func TestAuthenticate_FloodOfUnknownKeyIDsKeepsValidKeysCached(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{now: time.Now()}
	store := newMemStore()
	var valid []string
	var ids []string
	for i := range 50 {
		plain, id := store.addKey(t, fmt.Sprintf("team%d", i), clk.Now())
		valid, ids = append(valid, plain), append(ids, id)
	}
	a := auth.New(auth.Options{Credentials: store, Now: clk.Now})
	for _, k := range valid {
		if _, err := a.Authenticate(ctx, request("Authorization", "Bearer "+k)); err != nil {
			t.Fatal(err)
		}
	}
	const flood = 10_000
	for i := range flood {
		r := request("Authorization", "Bearer "+randomKey(t))
		r.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.%d.%d", i/250, i%250))
		if _, err := a.Authenticate(ctx, r); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("made-up key %d: %v", i, err)
		}
	}
	_, before := store.readsOf("")
	for i, k := range valid {
		if _, err := a.Authenticate(ctx, request("Authorization", "Bearer "+k)); err != nil {
			t.Fatalf("valid key after the flood: %v", err)
		}
		if n, _ := store.readsOf(ids[i]); n != 1 {
			t.Errorf("valid key %d read %d times, want once: the flood evicted it", i, n)
		}
	}
	if _, after := store.readsOf(""); after != before {
		t.Errorf("%d reads for cached keys after the flood", after-before)
	}
	if _, total := store.readsOf(""); total != flood+len(valid) {
		t.Errorf("%d reads, want one per made-up id and one per valid key (%d)", total, flood+len(valid))
	}
}

// TestAuthenticate_FailuresFromOneSourceAreLimitedBeforeStorage: one
// address presenting 1,000 made-up keys reaches storage for its first
// FailuresPerMinute only; other addresses, and the genuine credentials
// already cached, are unaffected; the budget refills with time.
func TestAuthenticate_FailuresFromOneSourceAreLimitedBeforeStorage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{now: time.Now()}
	store := newMemStore()
	cached, _ := store.addKey(t, "contoso", clk.Now())
	uncached, _ := store.addKey(t, "fabrikam", clk.Now())
	a := auth.New(auth.Options{Credentials: store, Now: clk.Now, FailuresPerMinute: 20})
	from := func(addr, cred string) error {
		r := request("Authorization", "Bearer "+cred)
		// What comes before the last entry is the client's to forge.
		r.Header.Set("X-Forwarded-For", randomKey(t)[4:12]+", "+addr)
		_, err := a.Authenticate(ctx, r)
		return err
	}
	attacker, neighbour := "203.0.113.7:51000", "203.0.113.8"
	if err := from(attacker, cached); err != nil {
		t.Fatal(err)
	}
	_, before := store.readsOf("")
	for i := range 1000 {
		if err := from(attacker, randomKey(t)); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("made-up key %d: %v", i, err)
		}
	}
	if _, after := store.readsOf(""); after-before != 20 {
		t.Errorf("1,000 failures from one source: %d reads, want 20", after-before)
	}
	if err := from(attacker, cached); err != nil {
		t.Errorf("a cached genuine key from the throttled source: %v", err)
	}
	if err := from(attacker, uncached); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("an uncached key from the throttled source = %v, want refused unread", err)
	}
	if err := from(neighbour, uncached); err != nil {
		t.Errorf("another source: %v", err)
	}
	clk.Add(3 * time.Second) // one failure's worth
	_, before = store.readsOf("")
	for range 5 {
		_ = from(attacker, randomKey(t))
	}
	if _, after := store.readsOf(""); after-before != 1 {
		t.Errorf("3 s later: %d reads, want 1", after-before)
	}
}

// TestAuthenticate_EpochUnreadableFallsBackToTTL: while the epoch cannot
// be read, cached credentials are used for their TTL, then read again.
func TestAuthenticate_EpochUnreadableFallsBackToTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{now: time.Now()}
	store := newMemStore()
	store.epochErr = errors.New("connection refused")
	plain, id := store.addKey(t, "contoso", clk.Now())
	a := auth.New(auth.Options{Credentials: store, Now: clk.Now, RevocationBound: 5 * time.Second, TTL: 30 * time.Second})
	for _, step := range []struct {
		advance time.Duration
		reads   int
	}{{0, 1}, {10 * time.Second, 1}, {19 * time.Second, 1}, {time.Second, 2}} {
		clk.Add(step.advance)
		if _, err := a.AuthenticateCredential(ctx, plain); err != nil {
			t.Fatal(err)
		}
		if n, _ := store.readsOf(id); n != step.reads {
			t.Errorf("at +%v: %d reads, want %d", step.advance, n, step.reads)
		}
	}
}

// TestAuthenticate_ThrottledSourceGetsNoTokenChecks: a source out of
// failures gets no signature checked and no application looked up; a
// token it presented before still works.
func TestAuthenticate_ThrottledSourceGetsNoTokenChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{now: time.Now()}
	store := newMemStore()
	store.apps[appContoso] = tenant.Credential{TenantID: "contoso", State: tenant.Active}
	signer := entratest.New(t, "k1")
	v, err := entra.NewVerifier(entra.Options{Issuers: []string{entratest.Issuer}, Audiences: []string{entratest.Audience},
		Keys: signer.Keys(), Now: clk.Now, AppOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(auth.Options{Credentials: store, Entra: v, Now: clk.Now, FailuresPerMinute: 5})
	from := func(token string) error {
		r := request("Authorization", "Bearer "+token)
		r.Header.Set("X-Forwarded-For", "203.0.113.7")
		_, err := a.Authenticate(ctx, r)
		return err
	}
	seen := signer.Token(t, entratest.Claims(appContoso, clk.Now()), nil)
	if err := from(seen); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := from(signer.Token(t, entratest.Claims(appNobody, clk.Now()), nil)); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("unmapped application: %v", err)
		}
	}
	_, before := store.readsOf("")
	fresh := signer.Token(t, entratest.Claims(appContoso, clk.Now().Add(time.Second)), nil)
	if err := from(fresh); !errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), "too many failed attempts") {
		t.Errorf("a new token from the throttled source = %v, want refused unchecked", err)
	}
	if err := from(seen); err != nil {
		t.Errorf("the token seen before: %v", err)
	}
	if _, after := store.readsOf(""); after != before {
		t.Errorf("%d reads while throttled", after-before)
	}
}
