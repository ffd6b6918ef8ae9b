package entra_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/entra"
	"github.com/offpath/offpath/internal/testing/entratest"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// issuer is a key endpoint the test steers: what it answers, and whether
// it hangs until released.
type issuer struct {
	srv      *httptest.Server
	fetches  atomic.Int32
	finished atomic.Int32 // requests answered or given up
	// entered receives one value per request, once it has arrived.
	entered chan struct{}

	mu     sync.Mutex
	status int
	doc    []byte
	hang   chan struct{} // non-nil: requests wait for it to close
}

func newIssuer(t *testing.T, signers ...*entratest.Signer) *issuer {
	t.Helper()
	is := &issuer{entered: make(chan struct{}, 10_000), status: http.StatusOK, doc: entratest.JWKS(signers...)}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		defer is.finished.Add(1)
		is.entered <- struct{}{}
		is.mu.Lock()
		status, doc, hang := is.status, is.doc, is.hang
		is.mu.Unlock()
		if hang != nil {
			select {
			case <-hang:
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(status)
		_, _ = w.Write(doc)
	}))
	t.Cleanup(func() {
		is.release()
		is.srv.Close()
	})
	return is
}

func (is *issuer) publish(status int, doc []byte) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.status, is.doc = status, doc
}

// hangNext makes requests wait until release.
func (is *issuer) hangNext() {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.hang = make(chan struct{})
}

func (is *issuer) release() {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.hang != nil {
		close(is.hang)
		is.hang = nil
	}
}

// waitFetch waits until a request has reached the issuer.
func (is *issuer) waitFetch(t *testing.T) {
	t.Helper()
	select {
	case <-is.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no fetch reached the key endpoint")
	}
}

// loaded returns a JWKS on the issuer whose keys have been fetched once,
// with a generous fetch timeout so that a hanging fetch stays hanging.
func loaded(t *testing.T, is *issuer, clk *clock) *entra.JWKS {
	t.Helper()
	keys := entra.NewJWKS(is.srv.URL, entra.JWKSOptions{Now: clk.Now, Timeout: time.Minute})
	if _, err := keys.Key(context.Background(), "k1"); err != nil {
		t.Fatalf("first Key(k1) = %v", err)
	}
	is.waitFetch(t)
	return keys
}

// unsigned is a token naming kid whose signature is never reached: the key
// lookup comes first.
func unsigned(kid string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","kid":"`+kid+`"}`)) + "." + enc([]byte(`{}`)) + "." + enc([]byte("sig"))
}

func verifierOn(t *testing.T, keys entra.KeySet, clk *clock) *entra.Verifier {
	t.Helper()
	v, err := entra.NewVerifier(entra.Options{Issuers: []string{entratest.Issuer}, Audiences: []string{entratest.Audience}, Keys: keys, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestJWKS_FetchesAndRollsOver(t *testing.T) {
	t.Parallel()
	clk := &clock{now: time.Now()}
	k1, k2 := entratest.New(t, "k1"), entratest.New(t, "k2")
	is := newIssuer(t, k1)
	v := verifierOn(t, loaded(t, is, clk), clk)
	ctx := context.Background()
	for range 3 {
		if _, err := v.Verify(ctx, k1.Token(t, entratest.Claims(app, clk.Now()), nil)); err != nil {
			t.Fatalf("Verify(k1) = %v", err)
		}
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("fetched the keys %d times, want once", n)
	}
	// The issuer rolls over to k2. Right after a successful fetch an
	// unknown kid causes none (forgeries name unknown kids too)...
	is.publish(http.StatusOK, entratest.JWKS(k1, k2))
	if _, err := v.Verify(ctx, k2.Token(t, entratest.Claims(app, clk.Now()), nil)); !errors.Is(err, entra.ErrInvalidToken) {
		t.Errorf("Verify(k2) right after a fetch = %v, want unknown key", err)
	}
	// ...five minutes later it does, and k2 is accepted.
	clk.Add(5 * time.Minute)
	if _, err := v.Verify(ctx, k2.Token(t, entratest.Claims(app, clk.Now()), nil)); err != nil {
		t.Errorf("Verify(k2) five minutes on = %v", err)
	}
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("fetched the keys %d times, want twice", n)
	}
}

// TestJWKS_ValidTokensNeverWaitOnAFetch: while a fetch hangs, tokens
// signed with a key already held verify at once, whether the fetch was
// caused by an unknown kid or by the keys' age.
func TestJWKS_ValidTokensNeverWaitOnAFetch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		advance time.Duration
		trigger func(ctx context.Context, v *entra.Verifier, k2 string) error
	}{
		{"fetch for an unknown kid", 6 * time.Minute, func(ctx context.Context, v *entra.Verifier, k2 string) error {
			_, err := v.Verify(ctx, k2)
			return err
		}},
		{"refresh of stale keys", 25 * time.Hour, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := &clock{now: time.Now()}
			k1, k2 := entratest.New(t, "k1"), entratest.New(t, "k2")
			is := newIssuer(t, k1)
			v := verifierOn(t, loaded(t, is, clk), clk)
			is.publish(http.StatusOK, entratest.JWKS(k1, k2))
			is.hangNext()
			clk.Add(tc.advance)
			valid := k1.Token(t, entratest.Claims(app, clk.Now()), nil)

			waiter := make(chan error, 1)
			if tc.trigger != nil {
				fresh := k2.Token(t, entratest.Claims(app, clk.Now()), nil)
				go func() { waiter <- tc.trigger(context.Background(), v, fresh) }()
			} else if _, err := v.Verify(context.Background(), valid); err != nil { // starts the refresh, does not wait
				t.Fatalf("Verify(k1) with stale keys = %v", err)
			}
			is.waitFetch(t) // the fetch is now in flight, and hangs until released

			const n = 200
			latencies := make([]time.Duration, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					start := time.Now()
					_, errs[i] = v.Verify(context.Background(), valid)
					latencies[i] = time.Since(start)
				})
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("verifications of a known key waited on the hanging fetch")
			}
			// They completed while the fetch was still hanging, not after it.
			if f, done := is.fetches.Load(), is.finished.Load(); f != 2 || done != 1 {
				t.Errorf("%d fetches, %d finished; want the first done and one hanging", f, done)
			}
			select {
			case err := <-waiter:
				t.Fatalf("the token with the unknown kid was answered before its fetch was: %v", err)
			default:
			}
			for _, err := range errs {
				if err != nil {
					t.Fatalf("Verify(k1) during the fetch = %v", err)
				}
			}
			slices.Sort(latencies)
			t.Logf("%d verifications while the fetch hangs: median %v, max %v", n, latencies[n/2], latencies[n-1])

			is.release()
			if tc.trigger != nil {
				if err := <-waiter; err != nil {
					t.Errorf("the token with the new key, once the fetch answered: %v", err)
				}
			}
		})
	}
}

// TestJWKS_FailingEndpointIsFetchedAHandfulOfTimes: 1,000 tokens naming
// unknown keys against a failing key endpoint cause a handful of fetches,
// not one each.
func TestJWKS_FailingEndpointIsFetchedAHandfulOfTimes(t *testing.T) {
	t.Parallel()
	k1 := entratest.New(t, "k1")
	big := []byte(`{"keys":[],"padding":"` + strings.Repeat("x", entra.MaxJWKSBytes) + `"}`)
	for _, failure := range []struct {
		name   string
		status int
		doc    []byte
	}{
		{"500", http.StatusInternalServerError, []byte(`{"error":"server_error"}`)},
		{"garbage", http.StatusOK, []byte("<html>not json")},
		{"over 1 MiB", http.StatusOK, big},
		{"no keys", http.StatusOK, []byte(`{"keys":[]}`)},
	} {
		for _, start := range []string{"never loaded", "stale"} {
			t.Run(failure.name+", "+start, func(t *testing.T) {
				t.Parallel()
				clk := &clock{now: time.Now()}
				is := newIssuer(t, k1)
				var keys *entra.JWKS
				if start == "stale" {
					keys = loaded(t, is, clk)
					clk.Add(25 * time.Hour)
				} else {
					keys = entra.NewJWKS(is.srv.URL, entra.JWKSOptions{Now: clk.Now})
				}
				is.publish(failure.status, failure.doc)
				before := is.fetches.Load()
				v := verifierOn(t, keys, clk)

				// 1,000 at the same moment: one fetch.
				var wg sync.WaitGroup
				for i := range 1000 {
					wg.Go(func() {
						if _, err := v.Verify(context.Background(), unsigned(fmt.Sprintf("x%d", i))); err == nil {
							t.Error("a token with an unknown key verified")
						}
					})
				}
				wg.Wait()
				if n := is.fetches.Load() - before; n != 1 {
					t.Errorf("1,000 simultaneous tokens: %d fetches, want 1", n)
				}
				// 1,000 spread over ten minutes: the wait grows after each failure.
				for i := range 1000 {
					clk.Add(600 * time.Millisecond)
					_, err := v.Verify(context.Background(), unsigned(fmt.Sprintf("y%d", i)))
					if !errors.Is(err, entra.ErrKeysUnavailable) && !errors.Is(err, entra.ErrInvalidToken) {
						t.Fatalf("Verify(unknown kid) = %v", err)
					}
				}
				n := is.fetches.Load() - before
				t.Logf("%d fetches for 2,000 tokens over ten minutes", n)
				if n > 8 {
					t.Errorf("%d fetches for 2,000 tokens over ten minutes, want a handful", n)
				}
				if start == "stale" {
					if _, err := v.Verify(context.Background(), k1.Token(t, entratest.Claims(app, clk.Now()), nil)); err != nil {
						t.Errorf("the key held, while the endpoint fails: %v", err)
					}
				}
			})
		}
	}
}

// TestJWKS_CancelledOrFailedFetchKeepsTheSlot: a caller that gives up does
// not cancel the fetch, and a failed fetch does not stop the next one for
// five minutes: a token signed with a newly published key is accepted as
// soon as the key can be had.
func TestJWKS_CancelledOrFailedFetchKeepsTheSlot(t *testing.T) {
	t.Parallel()
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		clk := &clock{now: time.Now()}
		k1, k2 := entratest.New(t, "k1"), entratest.New(t, "k2")
		is := newIssuer(t, k1)
		keys := loaded(t, is, clk)
		clk.Add(6 * time.Minute)
		is.publish(http.StatusOK, entratest.JWKS(k1, k2))
		is.hangNext()
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan error, 1)
		go func() { _, err := keys.Key(ctx, "k2"); got <- err }()
		is.waitFetch(t)
		cancel()
		if err := <-got; !errors.Is(err, entra.ErrKeysUnavailable) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Key(k2) cancelled = %v, want ErrKeysUnavailable and context.Canceled", err)
		}
		is.release()
		// Same moment, no five minutes waited: the fetch went on and has k2.
		if _, err := keys.Key(context.Background(), "k2"); err != nil {
			t.Errorf("Key(k2) after the cancelled caller = %v", err)
		}
		if n := is.fetches.Load(); n != 2 {
			t.Errorf("%d fetches, want 2", n)
		}
	})
	t.Run("failed", func(t *testing.T) {
		t.Parallel()
		clk := &clock{now: time.Now()}
		k1, k2 := entratest.New(t, "k1"), entratest.New(t, "k2")
		is := newIssuer(t, k1)
		keys := loaded(t, is, clk)
		clk.Add(6 * time.Minute)
		is.publish(http.StatusServiceUnavailable, nil)
		if _, err := keys.Key(context.Background(), "k2"); !errors.Is(err, entra.ErrKeysUnavailable) {
			t.Fatalf("Key(k2) with the endpoint failing = %v, want ErrKeysUnavailable", err)
		}
		is.publish(http.StatusOK, entratest.JWKS(k1, k2))
		clk.Add(entra.DefaultBackoffBase)
		if _, err := keys.Key(context.Background(), "k2"); err != nil {
			t.Errorf("Key(k2) once the backoff has passed = %v", err)
		}
	})
}

// TestJWKS_EmptyKeySetKeepsTheKeys: an answer with no usable key is an
// outage, not a rotation.
func TestJWKS_EmptyKeySetKeepsTheKeys(t *testing.T) {
	t.Parallel()
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []struct {
		name string
		doc  []byte
	}{
		{"empty", []byte(`{"keys":[]}`)},
		{"no keys member", []byte(`{}`)},
		{"only unusable keys", entratest.JWKS(&entratest.Signer{Kid: "small", Key: small})},
	} {
		t.Run(doc.name, func(t *testing.T) {
			t.Parallel()
			clk := &clock{now: time.Now()}
			k1 := entratest.New(t, "k1")
			is := newIssuer(t, k1)
			keys := loaded(t, is, clk)
			is.publish(http.StatusOK, doc.doc)
			clk.Add(25 * time.Hour)
			if _, err := keys.Key(context.Background(), "k9"); !errors.Is(err, entra.ErrKeysUnavailable) {
				t.Errorf("Key(k9) = %v, want ErrKeysUnavailable", err)
			}
			if _, err := keys.Key(context.Background(), "k1"); err != nil {
				t.Errorf("Key(k1) after an answer without keys = %v", err)
			}
		})
	}
}

// TestJWKS_RefreshesAheadOfMaxAge: past three quarters of MaxAge a known
// key's use starts a refresh in the background.
func TestJWKS_RefreshesAheadOfMaxAge(t *testing.T) {
	t.Parallel()
	clk := &clock{now: time.Now()}
	k1, k2 := entratest.New(t, "k1"), entratest.New(t, "k2")
	is := newIssuer(t, k1)
	keys := loaded(t, is, clk)
	is.publish(http.StatusOK, entratest.JWKS(k1, k2))
	clk.Add(17 * time.Hour)
	if _, err := keys.Key(context.Background(), "k1"); err != nil {
		t.Fatal(err)
	}
	if n := is.fetches.Load(); n != 1 {
		t.Fatalf("at 17 h: %d fetches, want 1", n)
	}
	clk.Add(2 * time.Hour)
	if _, err := keys.Key(context.Background(), "k1"); err != nil {
		t.Fatal(err)
	}
	is.waitFetch(t)
	// No five-minute slot to wait for: the refresh has (or will have) k2.
	if _, err := keys.Key(context.Background(), "k2"); err != nil {
		t.Errorf("Key(k2) after the refresh = %v", err)
	}
}

func TestJWKS_RefetchesUnknownKid(t *testing.T) {
	t.Parallel()
	k1, k2 := entratest.New(t, "k1"), entratest.New(t, "k2")
	url := entratest.Serve(t, k1, k2)
	keys := entra.NewJWKS(url, entra.JWKSOptions{})
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
	_, err := entra.NewJWKS(url, entra.JWKSOptions{}).Key(context.Background(), "k1")
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
	keys := entra.NewJWKS(entratest.Serve(t, s, entratest.New(t, "big")), entra.JWKSOptions{})
	if _, err := keys.Key(context.Background(), "small"); !errors.Is(err, entra.ErrInvalidToken) {
		t.Errorf("Key(1024-bit) = %v, want it ignored", err)
	}
}
