package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/offpath/offpath/internal/entra"
	"github.com/offpath/offpath/internal/tenant"
)

// The two refusals. Their messages are for logs; callers show a fixed text.
var (
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrForbidden       = errors.New("forbidden")
)

// Method is how a principal authenticated.
type Method string

// The methods.
const (
	APIKey   Method = "api_key"
	Entra    Method = "entra"
	AdminKey Method = "admin_key"
)

// Principal is an authenticated caller: a tenant, or the admin.
type Principal struct {
	// TenantID is the caller's tenant; empty for the admin.
	TenantID string
	Admin    bool
	Method   Method
}

// Credentials looks credentials up (package tablestore's Tenants).
type Credentials interface {
	KeyCredential(ctx context.Context, keyID string) (tenant.Credential, error)
	AppCredential(ctx context.Context, appID string) (tenant.Credential, error)
}

// Options configure an Authenticator.
type Options struct {
	Credentials Credentials
	// AdminKeyHashes are SHA-256 digests of the valid admin keys (several
	// during a rotation); none disables the admin scope.
	AdminKeyHashes [][sha256.Size]byte
	// Entra validates Entra ID tokens; nil refuses them.
	Entra *entra.Verifier
	// TTL is how long a looked-up credential is trusted. Default 30 s.
	TTL time.Duration
	// NegativeTTL is how long "no such credential" is remembered, so that
	// garbage keys do not each cost a read. Default 5 s.
	NegativeTTL time.Duration
	// MaxEntries bounds each cache; a full cache starts over. Default 10,000.
	MaxEntries int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Authenticator authenticates requests. It is safe for concurrent use.
type Authenticator struct {
	o Options

	// mu guards the caches; the maps themselves are never replaced.
	mu     sync.RWMutex
	keys   map[string]cached // by key id
	apps   map[string]cached // by Entra application id
	tokens map[[sha256.Size]byte]entra.Claims
}

type cached struct {
	cred    tenant.Credential
	missing bool
	until   time.Time
}

// New returns an Authenticator.
func New(o Options) *Authenticator {
	if o.TTL <= 0 {
		o.TTL = 30 * time.Second
	}
	if o.NegativeTTL <= 0 {
		o.NegativeTTL = 5 * time.Second
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 10_000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Authenticator{o: o, keys: map[string]cached{}, apps: map[string]cached{}, tokens: map[[sha256.Size]byte]entra.Claims{}}
}

// Forget empties the caches, so that a change made through this process
// (a suspension, a rotation) applies to its next request.
func (a *Authenticator) Forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.keys)
	clear(a.apps)
	clear(a.tokens)
}

// Authenticate returns the caller of r.
func (a *Authenticator) Authenticate(ctx context.Context, r *http.Request) (Principal, error) {
	cred, err := credential(r.Header)
	if err != nil {
		return Principal{}, err
	}
	return a.AuthenticateCredential(ctx, cred)
}

// credential extracts the presented credential: exactly one, from
// Authorization (Bearer) or api-key.
func credential(h http.Header) (string, error) {
	authz, keys := h.Values("Authorization"), h.Values("Api-Key")
	switch {
	case len(authz)+len(keys) == 0:
		return "", fmt.Errorf("%w: no credential", ErrUnauthenticated)
	case len(authz)+len(keys) > 1:
		return "", fmt.Errorf("%w: more than one credential", ErrUnauthenticated)
	case len(keys) == 1:
		if !strings.HasPrefix(keys[0], tenant.KeyPrefix) {
			return "", fmt.Errorf("%w: api-key holds no API key", ErrUnauthenticated)
		}
		return keys[0], nil
	}
	scheme, token, ok := strings.Cut(authz[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", fmt.Errorf("%w: Authorization is not a Bearer credential", ErrUnauthenticated)
	}
	return token, nil
}

// AuthenticateCredential returns the principal a credential stands for.
func (a *Authenticator) AuthenticateCredential(ctx context.Context, cred string) (Principal, error) {
	switch {
	case strings.HasPrefix(cred, tenant.KeyPrefix):
		return a.apiKey(ctx, cred)
	case strings.HasPrefix(cred, AdminKeyPrefix):
		return a.adminKey(cred)
	default:
		return a.entraToken(ctx, cred)
	}
}

func (a *Authenticator) apiKey(ctx context.Context, key string) (Principal, error) {
	id, secret, ok := tenant.ParseKey(key)
	if !ok {
		return Principal{}, fmt.Errorf("%w: malformed API key", ErrUnauthenticated)
	}
	c, err := a.lookup(ctx, a.keys, id, a.o.Credentials.KeyCredential)
	if err != nil {
		return Principal{}, err
	}
	if !c.Key.Verify(secret) {
		return Principal{}, fmt.Errorf("%w: wrong API key secret", ErrUnauthenticated)
	}
	if !c.Key.ActiveAt(a.o.Now()) {
		return Principal{}, fmt.Errorf("%w: API key expired after rotation", ErrUnauthenticated)
	}
	return principal(c, APIKey)
}

func (a *Authenticator) entraToken(ctx context.Context, token string) (Principal, error) {
	if a.o.Entra == nil {
		return Principal{}, fmt.Errorf("%w: Entra ID tokens are not configured", ErrUnauthenticated)
	}
	now := a.o.Now()
	sum := sha256.Sum256([]byte(token))
	a.mu.RLock()
	claims, ok := a.tokens[sum]
	a.mu.RUnlock()
	if !ok || !now.Before(claims.Expires) {
		var err error
		claims, err = a.o.Entra.Verify(ctx, token)
		switch {
		case errors.Is(err, entra.ErrInvalidToken):
			return Principal{}, fmt.Errorf("%w: %v", ErrUnauthenticated, err)
		case err != nil:
			return Principal{}, fmt.Errorf("verify Entra ID token: %w", err)
		}
		a.mu.Lock()
		if len(a.tokens) >= a.o.MaxEntries {
			clear(a.tokens)
		}
		a.tokens[sum] = claims
		a.mu.Unlock()
	}
	c, err := a.lookup(ctx, a.apps, claims.AppID, a.o.Credentials.AppCredential)
	if err != nil {
		return Principal{}, err
	}
	return principal(c, Entra)
}

func principal(c tenant.Credential, m Method) (Principal, error) {
	if c.State != tenant.Active {
		return Principal{}, fmt.Errorf("%w: %w", ErrForbidden, tenant.ErrSuspended)
	}
	return Principal{TenantID: c.TenantID, Method: m}, nil
}

// lookup returns a credential from cache or from storage.
func (a *Authenticator) lookup(ctx context.Context, cache map[string]cached, id string,
	read func(context.Context, string) (tenant.Credential, error)) (tenant.Credential, error) {
	now := a.o.Now()
	a.mu.RLock()
	e, ok := cache[id]
	a.mu.RUnlock()
	if !ok || !now.Before(e.until) {
		c, err := read(ctx, id)
		switch {
		case errors.Is(err, tenant.ErrNotFound):
			e = cached{missing: true, until: now.Add(a.o.NegativeTTL)}
		case err != nil:
			return tenant.Credential{}, fmt.Errorf("look up credential: %w", err)
		default:
			e = cached{cred: c, until: now.Add(a.o.TTL)}
		}
		a.mu.Lock()
		if len(cache) >= a.o.MaxEntries {
			clear(cache)
		}
		cache[id] = e
		a.mu.Unlock()
	}
	if e.missing {
		return tenant.Credential{}, fmt.Errorf("%w: unknown credential", ErrUnauthenticated)
	}
	return e.cred, nil
}

// adminKey checks key against the configured admin key hashes in constant
// time (each comparison is; the loop runs over all of them).
func (a *Authenticator) adminKey(key string) (Principal, error) {
	sum := sha256.Sum256([]byte(key))
	match := 0
	for _, h := range a.o.AdminKeyHashes {
		match |= subtle.ConstantTimeCompare(sum[:], h[:])
	}
	if match != 1 || !validAdminKey(key) {
		return Principal{}, fmt.Errorf("%w: not the admin key", ErrUnauthenticated)
	}
	return Principal{Admin: true, Method: AdminKey}, nil
}
