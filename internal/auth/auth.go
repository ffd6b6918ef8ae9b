package auth

import (
	"context"
	"crypto/rand"
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
	// CredentialEpoch changes whenever any tenant changes, anywhere.
	CredentialEpoch(ctx context.Context) (string, error)
}

// Defaults of Options.
const (
	DefaultRevocationBound   = 5 * time.Second
	DefaultTTL               = 30 * time.Second
	DefaultNegativeTTL       = 5 * time.Second
	DefaultMaxEntries        = 10_000
	DefaultFailuresPerMinute = 20
	// EpochTimeout bounds one read of the credential epoch: a request that
	// finds the epoch older than the bound waits for a read up to this long,
	// then falls back to the cache TTL.
	EpochTimeout = 5 * time.Second
)

// Options configure an Authenticator. Zero values take the defaults.
type Options struct {
	Credentials Credentials
	// AdminKeyHashes are SHA-256 digests of the valid admin keys (several
	// during a rotation); none disables the admin scope.
	AdminKeyHashes [][sha256.Size]byte
	// Entra validates Entra ID tokens; nil refuses them.
	Entra *entra.Verifier
	// RevocationBound is how soon a change made anywhere (a key revoked, a
	// rotation's overlap cut short, a tenant suspended, an application id
	// unmapped) is enforced here, while storage answers: the credential
	// epoch is never trusted older than this. Default 5 s.
	RevocationBound time.Duration
	// TTL is the longest a looked-up credential is used before it is read
	// again, and so the bound while the epoch cannot be read. Default 30 s.
	TTL time.Duration
	// NegativeTTL is how long "no such credential" is remembered, so that
	// garbage ids do not each cost a read. Default 5 s.
	NegativeTTL time.Duration
	// MaxEntries bounds each cache (credentials, unknown ids, tokens, failing
	// sources) on its own. Default 10,000.
	MaxEntries int
	// FailuresPerMinute is how many failed authentications one source may
	// make in a burst, and a minute, before what it presents is answered
	// from the cache alone. Default 20.
	FailuresPerMinute int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Authenticator authenticates requests. It is safe for concurrent use.
type Authenticator struct {
	o Options
	// dummy is checked against the secret presented with an unknown key
	// id, so that an unknown id costs the same work as a wrong secret.
	dummy    tenant.Key
	verify   func(k *tenant.Key, secret string) bool // (*tenant.Key).Verify
	keys     *cache                                  // by key id
	apps     *cache                                  // by Entra application id
	epoch    *epoch
	failures *failures

	mu     sync.RWMutex
	tokens map[[sha256.Size]byte]entra.Claims // verified tokens
}

// New returns an Authenticator.
func New(o Options) *Authenticator {
	o.RevocationBound = positive(o.RevocationBound, DefaultRevocationBound)
	o.TTL = positive(o.TTL, DefaultTTL)
	o.NegativeTTL = positive(o.NegativeTTL, DefaultNegativeTTL)
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.FailuresPerMinute <= 0 {
		o.FailuresPerMinute = DefaultFailuresPerMinute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	salt, hash := make([]byte, 16), make([]byte, sha256.Size)
	_, _ = rand.Read(salt) // crypto/rand.Read does not fail
	_, _ = rand.Read(hash)
	return &Authenticator{
		o:     o,
		dummy: tenant.Key{Salt: salt, Hash: hash}, verify: (*tenant.Key).Verify,
		keys: newCache(o.MaxEntries), apps: newCache(o.MaxEntries),
		epoch:    &epoch{read: o.Credentials.CredentialEpoch, bound: o.RevocationBound, timeout: EpochTimeout, maxWait: o.TTL, now: o.Now},
		failures: newFailures(o.FailuresPerMinute, o.MaxEntries),
		tokens:   map[[sha256.Size]byte]entra.Claims{},
	}
}

func positive(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Forget drops what is cached, so that a change made through this process
// (a suspension, a rotation) applies to its next request.
func (a *Authenticator) Forget() {
	a.epoch.invalidate()
	a.keys.clear()
	a.apps.clear()
}

// Authenticate returns the caller of r.
func (a *Authenticator) Authenticate(ctx context.Context, r *http.Request) (Principal, error) {
	cred, err := credential(r.Header)
	if err != nil {
		return Principal{}, err
	}
	return a.authenticate(ctx, source(r), cred)
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

// AuthenticateCredential returns the principal a credential stands for,
// presented from a source of its own.
func (a *Authenticator) AuthenticateCredential(ctx context.Context, cred string) (Principal, error) {
	return a.authenticate(ctx, "", cred)
}

func (a *Authenticator) authenticate(ctx context.Context, src, cred string) (Principal, error) {
	var p Principal
	var err error
	switch {
	case strings.HasPrefix(cred, tenant.KeyPrefix):
		p, err = a.apiKey(ctx, src, cred)
	case strings.HasPrefix(cred, AdminKeyPrefix):
		p, err = a.adminKey(cred)
	default:
		p, err = a.entraToken(ctx, src, cred)
	}
	if errors.Is(err, ErrUnauthenticated) {
		a.failures.fail(src, a.o.Now())
	}
	return p, err
}

// throttled answers a source that has used up its failures, for anything
// the cache cannot answer.
func throttled() error {
	return fmt.Errorf("%w: too many failed attempts from this source; not looked up", ErrUnauthenticated)
}

func (a *Authenticator) apiKey(ctx context.Context, src, key string) (Principal, error) {
	id, secret, ok := tenant.ParseKey(key)
	if !ok {
		return Principal{}, fmt.Errorf("%w: malformed API key", ErrUnauthenticated)
	}
	c, found, err := a.lookup(ctx, src, a.keys, id, a.o.Credentials.KeyCredential)
	if err != nil {
		return Principal{}, err
	}
	k := a.dummy // an unknown id costs the same HMAC as a wrong secret
	if found {
		k = c.Key
	}
	if !a.verify(&k, secret) || !found {
		return Principal{}, fmt.Errorf("%w: unknown API key or wrong secret", ErrUnauthenticated)
	}
	if !c.Key.ActiveAt(a.o.Now()) {
		return Principal{}, fmt.Errorf("%w: API key expired after rotation", ErrUnauthenticated)
	}
	return principal(c, APIKey)
}

func (a *Authenticator) entraToken(ctx context.Context, src, token string) (Principal, error) {
	if a.o.Entra == nil {
		return Principal{}, fmt.Errorf("%w: Entra ID tokens are not configured", ErrUnauthenticated)
	}
	now := a.o.Now()
	sum := sha256.Sum256([]byte(token))
	a.mu.RLock()
	claims, ok := a.tokens[sum]
	a.mu.RUnlock()
	if !ok || !now.Before(claims.Expires) {
		if a.failures.blocked(src, now) {
			return Principal{}, throttled()
		}
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
	c, found, err := a.lookup(ctx, src, a.apps, claims.AppID, a.o.Credentials.AppCredential)
	if err != nil {
		return Principal{}, err
	}
	if !found {
		return Principal{}, fmt.Errorf("%w: application not mapped to a tenant", ErrUnauthenticated)
	}
	return principal(c, Entra)
}

func principal(c tenant.Credential, m Method) (Principal, error) {
	if c.State != tenant.Active {
		return Principal{}, fmt.Errorf("%w: %w", ErrForbidden, tenant.ErrSuspended)
	}
	return Principal{TenantID: c.TenantID, Method: m}, nil
}

// lookup returns a credential from cache or from storage; found is false
// for an id that does not exist. A source out of failures is not looked up.
func (a *Authenticator) lookup(ctx context.Context, src string, c *cache, id string,
	read func(context.Context, string) (tenant.Credential, error)) (cred tenant.Credential, found bool, err error) {
	gen := a.epoch.sync(ctx)
	now := a.o.Now()
	switch cred, got := c.get(id, gen, now, a.o.TTL); got {
	case isFound:
		return cred, true, nil
	case isMissing:
		return tenant.Credential{}, false, nil
	}
	if a.failures.blocked(src, now) {
		return tenant.Credential{}, false, throttled()
	}
	cred, err = read(ctx, id)
	switch {
	case errors.Is(err, tenant.ErrNotFound):
		c.putMissing(id, gen, now.Add(min(a.o.NegativeTTL, a.o.TTL)))
		return tenant.Credential{}, false, nil
	case err != nil:
		return tenant.Credential{}, false, fmt.Errorf("look up credential: %w", err)
	}
	c.putFound(id, cred, gen, now)
	return cred, true, nil
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
