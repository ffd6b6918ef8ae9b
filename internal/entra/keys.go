package entra

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"sync"
	"time"
)

// MinKeyBits is the smallest RSA key accepted.
const MinKeyBits = 2048

// StaticKeys is a fixed KeySet, by key id.
type StaticKeys map[string]*rsa.PublicKey

// Key implements KeySet.
func (s StaticKeys) Key(_ context.Context, kid string) (*rsa.PublicKey, error) {
	if k, ok := s[kid]; ok {
		return k, nil
	}
	return nil, invalid("unknown signing key")
}

// JWKS is the issuer's published signing keys (a JSON Web Key Set), fetched
// on first use, refreshed daily, and refetched (at most every five minutes)
// when a token names a key it does not hold, which is how Entra's key
// rollover shows up.
type JWKS struct {
	url    string
	client *http.Client
	now    func() time.Time

	mu      sync.Mutex
	keys    map[string]*rsa.PublicKey
	fetched time.Time
	tried   time.Time
}

// NewJWKS returns the key set published at url, e.g.
// https://login.microsoftonline.com/<directory id>/discovery/v2.0/keys.
func NewJWKS(url string, client *http.Client) *JWKS {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return &JWKS{url: url, client: client, now: time.Now}
}

// Key implements KeySet.
func (j *JWKS) Key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.now()
	k, ok := j.keys[kid]
	stale := now.Sub(j.fetched) > 24*time.Hour
	if ok && !stale {
		return k, nil
	}
	if !stale && now.Sub(j.tried) < 5*time.Minute {
		return nil, invalid("unknown signing key")
	}
	j.tried = now
	keys, err := j.fetch(ctx)
	if err != nil {
		if ok { // keep using a known key while the issuer is unreachable
			return k, nil
		}
		return nil, fmt.Errorf("%w: %v", ErrKeysUnavailable, err)
	}
	j.keys, j.fetched = keys, now
	if k, ok := keys[kid]; ok {
		return k, nil
	}
	return nil, invalid("unknown signing key")
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
	res, err := j.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch jwks: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch jwks: status %d", res.StatusCode)
	}
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&doc); err != nil {
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
