package entra

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"sync"
	"time"
)

// MinKeyBits is the smallest RSA key accepted.
const MinKeyBits = 2048

// MaxJWKSBytes bounds the key set document read from the issuer.
const MaxJWKSBytes = 1 << 20

// The defaults of JWKSOptions' backoff.
const (
	DefaultBackoffBase = 5 * time.Second
	DefaultBackoffMax  = 5 * time.Minute
)

// StaticKeys is a fixed KeySet, by key id.
type StaticKeys map[string]*rsa.PublicKey

// Key implements KeySet.
func (s StaticKeys) Key(_ context.Context, kid string) (*rsa.PublicKey, error) {
	if k, ok := s[kid]; ok {
		return k, nil
	}
	return nil, invalid("unknown signing key")
}

// JWKSOptions configure a JWKS. Zero values take the defaults.
type JWKSOptions struct {
	// Client fetches the document (default: a plain http.Client; the
	// fetch's own Timeout bounds it).
	Client *http.Client
	// Timeout bounds one fetch (default 10 s).
	Timeout time.Duration
	// MaxAge is how old the keys may get before they must be refreshed
	// (default 24 h). A refresh starts in the background from three
	// quarters of it on; keys past it are still served while the issuer
	// cannot be reached.
	MaxAge time.Duration
	// UnknownKeyRefetch is how soon after a successful fetch a token naming
	// an unknown key may cause another (default 5 min): key rollover shows
	// up as an unknown kid, forgeries too.
	UnknownKeyRefetch time.Duration
	// BackoffBase and BackoffMax shape the wait after a failed fetch: it
	// doubles from BackoffBase with each failure in a row, up to BackoffMax
	// (defaults DefaultBackoffBase and DefaultBackoffMax).
	BackoffBase, BackoffMax time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// JWKS is the issuer's published signing keys (a JSON Web Key Set).
//
// Fetching never stands in the way of a token whose key is known: the keys
// held are served at once, and a refresh (ahead of MaxAge) runs in the
// background. Only a token naming a key not held waits, for at most one
// fetch in flight at a time, and that fetch runs on its own context and
// timeout, so a caller that gives up neither cancels it nor wastes it.
// A failed fetch (error status, garbage, a document over MaxJWKSBytes, or
// no usable key at all) changes nothing held and makes the next attempt
// wait, longer with each failure in a row, whatever asks for it.
type JWKS struct {
	url string
	o   JWKSOptions

	mu       sync.Mutex
	keys     map[string]*rsa.PublicKey
	fetched  time.Time     // last successful fetch (zero: never)
	failures int           // failed fetches in a row
	retryAt  time.Time     // no fetch starts before this
	inflight chan struct{} // closed when the fetch in flight ends; nil if none
	lastErr  error
}

// NewJWKS returns the key set published at url, e.g.
// https://login.microsoftonline.com/<directory id>/discovery/v2.0/keys.
func NewJWKS(url string, o JWKSOptions) *JWKS {
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 24 * time.Hour
	}
	if o.UnknownKeyRefetch <= 0 {
		o.UnknownKeyRefetch = 5 * time.Minute
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = DefaultBackoffBase
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = DefaultBackoffMax
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &JWKS{url: url, o: o}
}

// Key implements KeySet.
func (j *JWKS) Key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	j.mu.Lock()
	now := j.o.Now()
	if k, ok := j.keys[kid]; ok {
		if now.Sub(j.fetched) >= j.o.MaxAge*3/4 {
			j.startLocked(now)
		}
		j.mu.Unlock()
		return k, nil
	}
	loaded := !j.fetched.IsZero()
	if loaded && now.Sub(j.fetched) < j.o.UnknownKeyRefetch {
		j.mu.Unlock()
		return nil, invalid("unknown signing key")
	}
	done := j.startLocked(now)
	if done == nil { // backing off after failures
		err := j.lastErr
		j.mu.Unlock()
		return nil, fmt.Errorf("%w: %v (retrying later)", ErrKeysUnavailable, err)
	}
	j.mu.Unlock()

	select {
	case <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrKeysUnavailable, context.Cause(ctx))
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if k, ok := j.keys[kid]; ok {
		return k, nil
	}
	if j.fetched.IsZero() || j.failures > 0 {
		return nil, fmt.Errorf("%w: %v", ErrKeysUnavailable, j.lastErr)
	}
	return nil, invalid("unknown signing key")
}

// startLocked starts a fetch unless one is in flight (whose end it then
// returns) or failures say to wait (nil). j.mu is held.
func (j *JWKS) startLocked(now time.Time) <-chan struct{} {
	if j.inflight != nil {
		return j.inflight
	}
	if now.Before(j.retryAt) {
		return nil
	}
	done := make(chan struct{})
	j.inflight = done
	go j.refresh(done)
	return done
}

// refresh fetches the keys on its own context and records the outcome.
func (j *JWKS) refresh(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), j.o.Timeout)
	defer cancel()
	keys, err := j.fetch(ctx)
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.o.Now()
	if err != nil {
		j.failures++
		j.retryAt = now.Add(j.backoff())
		j.lastErr = err
	} else {
		j.keys, j.fetched, j.failures, j.retryAt, j.lastErr = keys, now, 0, time.Time{}, nil
	}
	j.inflight = nil
	close(done)
}

func (j *JWKS) backoff() time.Duration {
	d := j.o.BackoffBase
	for i := 1; i < j.failures && d < j.o.BackoffMax; i++ {
		d *= 2
	}
	return min(d, j.o.BackoffMax)
}

type jwk struct {
	Kty string `json:"kty"`
	Use string `json:"use"`
	Kid string `json:"kid"`
	N   string `json:"n"`
	E   string `json:"e"`
}

func (j *JWKS) fetch(ctx context.Context) (map[string]*rsa.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.url, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks request: %w", err)
	}
	res, err := j.o.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch jwks: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch jwks: status %d", res.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, MaxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read jwks: %w", err)
	}
	if len(b) > MaxJWKSBytes {
		return nil, fmt.Errorf("read jwks: larger than %d bytes", MaxJWKSBytes)
	}
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("decode jwks: %w", err)
	}
	keys := map[string]*rsa.PublicKey{}
	for _, k := range doc.Keys {
		if k.Kty != "RSA" || (k.Use != "" && k.Use != "sig") || k.Kid == "" {
			continue
		}
		if pk, err := ParseRSAKey(k.N, k.E); err == nil {
			keys[k.Kid] = pk
		}
	}
	if len(keys) == 0 {
		// Never trade the keys held for none: an empty set verifies
		// nothing, so it is an outage, not a rotation.
		return nil, errors.New("decode jwks: no usable RSA signing key")
	}
	return keys, nil
}

// ParseRSAKey builds an RSA public key from a JWK's base64url n and e.
func ParseRSAKey(n64, e64 string) (*rsa.PublicKey, error) {
	nb, err := base64.RawURLEncoding.DecodeString(n64)
	if err != nil {
		return nil, fmt.Errorf("jwk n: %w", err)
	}
	eb, err := base64.RawURLEncoding.DecodeString(e64)
	if err != nil || len(eb) == 0 || len(eb) > 4 {
		return nil, fmt.Errorf("jwk e: malformed")
	}
	e := 0
	for _, b := range eb {
		e = e<<8 | int(b)
	}
	n := new(big.Int).SetBytes(nb)
	if n.BitLen() < MinKeyBits || e < 3 || e%2 == 0 {
		return nil, fmt.Errorf("jwk: RSA key below %d bits or bad exponent", MinKeyBits)
	}
	return &rsa.PublicKey{N: n, E: e}, nil
}
