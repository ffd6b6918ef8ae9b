// Package config turns the handler's environment (the Functions host passes
// every app setting as an environment variable) into a typed, validated
// Handler. It reads only through an injected getenv and readFile, so tests
// and the dev host can drive it without touching the process environment.
//
// The configuration is organised by the external system it reaches: one
// Storage section (Table and Blob Storage: endpoints and how to
// authenticate), one AOAI section (the Azure OpenAI resource: endpoint,
// surface, credential, the queue path's retries and quotas), then the flows
// that use them (Batch, Nightly, Ingest, Reconcile) and where token metrics
// go. Loading is three steps: each setting is parsed once (parse), every
// default is applied once (WithDefaults), then the checks that span
// settings run (validate). Print writes the effective result with every
// secret redacted (handler -print-config).
package config

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ncrontab"
)

// Handler is the custom handler's configuration. A pointer field is a
// setting whose zero value is a choice of its own (false, 0, debug): nil
// until WithDefaults.
type Handler struct {
	// Port is FUNCTIONS_CUSTOMHANDLER_PORT, chosen by the host per start.
	Port int `json:"port"`
	// AppRoot is FUNCTIONS_APP_ROOT_PATH (default: the working directory).
	AppRoot string `json:"app_root"`
	// FunctionTimeout is host.json's functionTimeout; zero means unbounded.
	FunctionTimeout time.Duration `json:"function_timeout"`
	// LockRenewal is host.json's extensions.serviceBus.
	// maxAutoLockRenewalDuration (the extension's 5 minutes when absent);
	// zero means unbounded.
	LockRenewal time.Duration `json:"service_bus_lock_renewal"`
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
	LogLevel *zerolog.Level `json:"log_level"`

	// Storage is the storage account: Table Storage for tenants, the
	// ledger and every record, Blob Storage for documents, batch inputs
	// and results (see Storage).
	Storage Storage `json:"storage"`
	// AOAI is the Azure OpenAI resource (see AOAI).
	AOAI AOAI `json:"aoai"`
	// AlertWebhook is OFFPATH_ALERT_WEBHOOK_URL: alerts are also POSTed
	// there (secret: it may carry a token).
	AlertWebhook Secret `json:"alert_webhook"`

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
	// without APPLICATIONINSIGHTS_CONNECTION_STRING,
	// OFFPATH_TOKEN_METRICS_FILE or OFFPATH_METRICS_ADDR (see TokenMetrics).
	TokenMetrics *TokenMetrics `json:"token_metrics,omitempty"`
}

// LoadHandler reads the handler's configuration: every setting parsed,
// the defaults applied, the whole checked. readFile reads host.json and
// models.json from the app folder.
func LoadHandler(getenv func(string) string, readFile func(string) ([]byte, error)) (Handler, error) {
	return load(getenv, readFile, true)
}

// Inspect is LoadHandler for printing the configuration outside the host:
// a missing FUNCTIONS_CUSTOMHANDLER_PORT, which only the host sets when it
// starts the handler, is not an error.
func Inspect(getenv func(string) string, readFile func(string) ([]byte, error)) (Handler, error) {
	return load(getenv, readFile, false)
}

func load(getenv func(string) string, readFile func(string) ([]byte, error), needPort bool) (Handler, error) {
	c, errs := parse(getenv, readFile, needPort)
	c = c.WithDefaults()
	return c, errors.Join(append(errs, c.validate()...)...)
}

// parse reads every setting once, checking each on its own; what is unset
// stays zero (nil for a pointer).
func parse(getenv func(string) string, readFile func(string) ([]byte, error), needPort bool) (Handler, []error) {
	var c Handler
	var errs []error
	portText := cmp.Or(getenv("FUNCTIONS_CUSTOMHANDLER_PORT"), getenv("FUNCTIONS_HTTPWORKER_PORT"))
	switch p, err := strconv.Atoi(portText); {
	case portText == "" && needPort:
		errs = append(errs, errors.New("FUNCTIONS_CUSTOMHANDLER_PORT is not set: the handler is started by the Functions host (or the dev host), which sets it"))
	case portText == "":
	case err != nil || p <= 0 || p > 65535:
		errs = append(errs, fmt.Errorf("FUNCTIONS_CUSTOMHANDLER_PORT %q is not a port number", portText))
	default:
		c.Port = p
	}
	c.AppRoot = getenv("FUNCTIONS_APP_ROOT_PATH")
	errs = append(errs, c.readHost(readFile)...)
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
	if s := getenv("OFFPATH_REQUEST_READ_TIMEOUT"); s != "" {
		if d, err := time.ParseDuration(s); err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("OFFPATH_REQUEST_READ_TIMEOUT %q: want a positive duration such as 1m", s))
		} else {
			c.RequestReadTimeout = d
		}
	}
	if s := getenv("OFFPATH_LOG_LEVEL"); s != "" {
		if l, err := zerolog.ParseLevel(strings.ToLower(s)); err != nil {
			errs = append(errs, fmt.Errorf("OFFPATH_LOG_LEVEL: %w", err))
		} else {
			c.LogLevel = &l
		}
	}
	var err error
	if c.Storage, err = parseStorage(getenv); err != nil {
		errs = append(errs, err)
	}
	var aerrs []error
	c.AOAI, aerrs = parseAOAI(getenv)
	errs = append(errs, aerrs...)
	if w := getenv("OFFPATH_ALERT_WEBHOOK_URL"); w != "" {
		c.AlertWebhook = Secret(w)
		if !httpsURL(w) {
			errs = append(errs, errors.New("OFFPATH_ALERT_WEBHOOK_URL: must be an https URL (http only on loopback)"))
		}
	}
	errs = append(errs, c.parseTenancy(getenv, readFile)...)
	errs = append(errs, c.parseBatch(getenv)...)
	errs = append(errs, c.parseNightly(getenv)...)
	errs = append(errs, c.parseIngest(getenv)...)
	errs = append(errs, c.parseReconcile(getenv)...)
	errs = append(errs, c.parseTokenMetrics(getenv)...)
	return c, errs
}

// readHost reads what the handler needs of host.json: functionTimeout and
// the Service Bus extension's lock renewal.
func (c *Handler) readHost(readFile func(string) ([]byte, error)) []error {
	host, err := readFile(filepath.Join(cmp.Or(c.AppRoot, DefaultAppRoot), "host.json"))
	if err != nil {
		return []error{fmt.Errorf("read host.json: %w", err)}
	}
	var h struct {
		FunctionTimeout string `json:"functionTimeout"`
		Extensions      struct {
			ServiceBus struct {
				MaxAutoLockRenewalDuration string `json:"maxAutoLockRenewalDuration"`
			} `json:"serviceBus"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal(host, &h); err != nil {
		return []error{fmt.Errorf("host.json: %w", err)}
	}
	var errs []error
	if c.FunctionTimeout, err = ParseTimeSpan(h.FunctionTimeout); err != nil {
		errs = append(errs, fmt.Errorf("host.json functionTimeout: %w", err))
	}
	// Absent, the extension's own default applies, as the host reads it.
	if c.LockRenewal, err = ParseTimeSpan(cmp.Or(h.Extensions.ServiceBus.MaxAutoLockRenewalDuration, "00:05:00")); err != nil {
		errs = append(errs, fmt.Errorf("host.json extensions.serviceBus.maxAutoLockRenewalDuration: %w", err))
	}
	return errs
}

// validate runs the checks that span settings, on the effective values.
func (c Handler) validate() []error {
	var errs []error
	if c.InvocationTimeout <= 0 {
		errs = append(errs, fmt.Errorf("host.json functionTimeout %v leaves no time for an invocation", c.FunctionTimeout))
	}
	if c.AuthRevocationBound > c.AuthCacheTTL {
		errs = append(errs, fmt.Errorf("OFFPATH_AUTH_REVOCATION_BOUND %v: must not exceed OFFPATH_AUTH_CACHE_TTL %v", c.AuthRevocationBound, c.AuthCacheTTL))
	}
	if c.Ingest.Budget <= 0 {
		errs = append(errs, fmt.Errorf("the Service Bus lock renewal leaves no time to process a message"))
	}
	if c.AOAI.Endpoint != "" {
		if ttl, renew := c.AOAI.LeaseTTL, c.AOAI.LeaseRenew; ttl <= renew {
			errs = append(errs, fmt.Errorf("OFFPATH_AOAI_LEASE_TTL %v must be longer than OFFPATH_AOAI_LEASE_RENEW %v", ttl, renew))
		}
		if c.Storage.ConnectionString == "" && c.Storage.BlobServiceURL == "" {
			errs = append(errs, fmt.Errorf("%s__blobServiceUri or __accountName is needed for the documents of the queue path and for batch inputs and results", c.Storage.Setting))
		}
	}
	return errs
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
