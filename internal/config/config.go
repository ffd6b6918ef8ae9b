// Package config turns the handler's environment (the Functions host passes
// every app setting as an environment variable) into a typed, validated
// Config. It reads only through an injected getenv and readFile, so tests
// and the dev host can drive it without touching the process environment.
package config

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/offpath/offpath/internal/ncrontab"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/catalog"
)

// DefaultRequestReadTimeout is how long the handler's server waits for a
// whole request. The Functions host is its only client, on loopback, but it
// may stream a caller's body as it arrives: as long as the front allows.
const DefaultRequestReadTimeout = time.Minute

// Handler is the custom handler's configuration.
type Handler struct {
	// Port is FUNCTIONS_CUSTOMHANDLER_PORT, chosen by the host per start.
	Port int `json:"port"`
	// AppRoot is FUNCTIONS_APP_ROOT_PATH (default: the working directory).
	AppRoot string `json:"app_root"`
	// FunctionTimeout is host.json's functionTimeout; zero means unbounded.
	FunctionTimeout time.Duration `json:"function_timeout"`
	// InvocationTimeout is each invocation's own deadline: functionTimeout
	// less a margin (a tenth, at least 5 s), so the handler answers before
	// the host gives up; 30 minutes when functionTimeout is unbounded.
	// OFFPATH_INVOCATION_TIMEOUT overrides it.
	InvocationTimeout time.Duration `json:"invocation_timeout"`
	// RequestReadTimeout bounds the reading of a whole request, headers and
	// body, on the handler's HTTP server, so a client sending slowly cannot
	// hold a connection: OFFPATH_REQUEST_READ_TIMEOUT, default
	// DefaultRequestReadTimeout.
	RequestReadTimeout time.Duration `json:"request_read_timeout"`
	// LogLevel is OFFPATH_LOG_LEVEL (default info).
	LogLevel zerolog.Level `json:"log_level"`

	// Storage is where tenants and the ledger live (see Storage).
	Storage Storage `json:"storage"`
	// Catalog is the model catalog, from ModelsSource: OFFPATH_MODELS if set,
	// else models.json in the app folder.
	Catalog      *catalog.Catalog `json:"-"`
	ModelsSource string           `json:"models_source"`
	// AdminKeyHashes are OFFPATH_ADMIN_KEY_SHA256's digests of the admin
	// keys (comma-separated hex SHA-256; several during a rotation; none
	// disables the admin API). AdminKeys is how many.
	AdminKeyHashes [][sha256.Size]byte `json:"-"`
	AdminKeys      int                 `json:"admin_keys"`
	// Entra enables Entra ID tokens for tenants; nil when not configured.
	Entra *Entra `json:"entra,omitempty"`
	// AuthCacheTTL is OFFPATH_AUTH_CACHE_TTL (default 30s, 1s to 10m):
	// the longest a credential, once read, is used before it is read again,
	// and so how long a change made elsewhere may take while the credential
	// epoch cannot be read.
	AuthCacheTTL time.Duration `json:"auth_cache_ttl"`
	// AuthRevocationBound is OFFPATH_AUTH_REVOCATION_BOUND (default 5s, or
	// AuthCacheTTL if shorter; 1s to 1m, at most AuthCacheTTL): how soon a
	// key revoked, a tenant suspended or an overlap ended anywhere is
	// enforced by this instance.
	AuthRevocationBound time.Duration `json:"auth_revocation_bound"`
	// AuthFailuresPerMinute is OFFPATH_AUTH_FAILURES_PER_MINUTE (default
	// 20, 1 to 10,000): failed authentications one client address may make
	// in a burst, and a minute, before it is answered from the cache only.
	AuthFailuresPerMinute int `json:"auth_failures_per_minute"`
	// Batch configures the batch control plane; nil without
	// OFFPATH_AOAI_ENDPOINT (see Batch).
	Batch *Batch `json:"batch,omitempty"`
	// Nightly configures the scheduled batch work; set with Batch.
	Nightly *Nightly `json:"nightly,omitempty"`
	// Ingest configures the queue path (see Ingest).
	Ingest Ingest `json:"ingest"`
	// Reconcile configures the reconcile timer; nil without
	// OFFPATH_AOAI_RESOURCE_ID (see Reconcile).
	Reconcile *Reconcile `json:"reconcile,omitempty"`
	// TokenMetrics says where ledger changes go as token metrics; nil
	// without APPLICATIONINSIGHTS_CONNECTION_STRING or
	// OFFPATH_TOKEN_METRICS_FILE (see TokenMetrics).
	TokenMetrics *TokenMetrics `json:"token_metrics,omitempty"`
}

// LoadHandler reads the handler's configuration. readFile reads host.json.
func LoadHandler(getenv func(string) string, readFile func(string) ([]byte, error)) (Handler, error) {
	var c Handler
	var errs []error
	portText := cmp.Or(getenv("FUNCTIONS_CUSTOMHANDLER_PORT"), getenv("FUNCTIONS_HTTPWORKER_PORT"))
	if portText == "" {
		errs = append(errs, errors.New("FUNCTIONS_CUSTOMHANDLER_PORT is not set: the handler is started by the Functions host (or the dev host), which sets it"))
	} else if p, err := strconv.Atoi(portText); err != nil || p <= 0 || p > 65535 {
		errs = append(errs, fmt.Errorf("FUNCTIONS_CUSTOMHANDLER_PORT %q is not a port number", portText))
	} else {
		c.Port = p
	}
	c.AppRoot = cmp.Or(getenv("FUNCTIONS_APP_ROOT_PATH"), ".")

	host, err := readFile(filepath.Join(c.AppRoot, "host.json"))
	if err != nil {
		errs = append(errs, fmt.Errorf("read host.json: %w", err))
	} else {
		var h struct {
			FunctionTimeout string `json:"functionTimeout"`
		}
		if err := json.Unmarshal(host, &h); err != nil {
			errs = append(errs, fmt.Errorf("host.json: %w", err))
		} else if c.FunctionTimeout, err = ParseTimeSpan(h.FunctionTimeout); err != nil {
			errs = append(errs, fmt.Errorf("host.json functionTimeout: %w", err))
		}
	}
	c.InvocationTimeout = 30 * time.Minute
	if c.FunctionTimeout > 0 {
		c.InvocationTimeout = c.FunctionTimeout - max(c.FunctionTimeout/10, 5*time.Second)
	}
	if s := getenv("OFFPATH_INVOCATION_TIMEOUT"); s != "" {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("OFFPATH_INVOCATION_TIMEOUT: %w", err))
		case d <= 0 || (c.FunctionTimeout > 0 && d >= c.FunctionTimeout):
			errs = append(errs, fmt.Errorf("OFFPATH_INVOCATION_TIMEOUT %v must be positive and below functionTimeout %v", d, c.FunctionTimeout))
		default:
			c.InvocationTimeout = d
		}
	}
	if c.InvocationTimeout <= 0 {
		errs = append(errs, fmt.Errorf("host.json functionTimeout %v leaves no time for an invocation", c.FunctionTimeout))
	}
	c.RequestReadTimeout = DefaultRequestReadTimeout
	if s := getenv("OFFPATH_REQUEST_READ_TIMEOUT"); s != "" {
		if d, err := time.ParseDuration(s); err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("OFFPATH_REQUEST_READ_TIMEOUT %q: want a positive duration such as 1m", s))
		} else {
			c.RequestReadTimeout = d
		}
	}
	c.LogLevel = zerolog.InfoLevel
	if s := getenv("OFFPATH_LOG_LEVEL"); s != "" {
		if c.LogLevel, err = zerolog.ParseLevel(strings.ToLower(s)); err != nil {
			errs = append(errs, fmt.Errorf("OFFPATH_LOG_LEVEL: %w", err))
		}
	}
	errs = append(errs, c.loadTenancy(getenv, readFile)...)
	errs = append(errs, c.loadBatch(getenv)...)
	errs = append(errs, c.loadNightly(getenv)...)
	errs = append(errs, c.loadIngest(getenv, readFile)...)
	errs = append(errs, c.loadReconcile(getenv)...)
	errs = append(errs, c.loadTokenMetrics(getenv)...)
	return c, errors.Join(errs...)
}

// ParseTimeSpan parses host.json's functionTimeout: a TimeSpan as the host
// reads it (ncrontab.ParseTimeSpan); "" and "-1" mean unbounded (zero).
func ParseTimeSpan(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "-1" {
		return 0, nil
	}
	return ncrontab.ParseTimeSpan(s)
}
