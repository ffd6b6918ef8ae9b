package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/catalog"
)

// Storage says where the tenants and the ledger live. It follows the
// Functions host's own connection conventions, under the setting name
// OFFPATH_STORAGE if any OFFPATH_STORAGE* setting is present (to keep the
// ledger apart from the host's storage), else AzureWebJobsStorage:
//
//	<name>                   a connection string (shared key, or
//	                         UseDevelopmentStorage=true for Azurite)
//	<name>__tableServiceUri  the table endpoint, used with managed identity
//	<name>__accountName      the account, for https://<name>.table.core.windows.net
//	<name>__clientId         a user-assigned identity's client id; without
//	                         it DefaultAzureCredential (system-assigned
//	                         identity in Azure, developer logins locally)
type Storage struct {
	// Setting is the setting name the connection came from.
	Setting string `json:"setting"`
	// ConnectionString is secret: never logged.
	ConnectionString string `json:"-"`
	TableServiceURL  string `json:"table_service_url,omitempty"`
	ClientID         string `json:"client_id,omitempty"`
}

// Entra configures Entra ID tokens for tenants; nil when not used.
type Entra struct {
	// Issuers is OFFPATH_ENTRA_ISSUERS, comma-separated.
	Issuers []string `json:"issuers"`
	// Audiences is OFFPATH_ENTRA_AUDIENCES, comma-separated.
	Audiences []string `json:"audiences"`
	// JWKSURL is OFFPATH_ENTRA_JWKS_URL, e.g.
	// https://login.microsoftonline.com/<directory id>/discovery/v2.0/keys.
	JWKSURL string `json:"jwks_url"`
	// AppOnly is OFFPATH_ENTRA_APP_ONLY (default true): accept application
	// tokens only (no scp; idtyp "app", or one of Roles), never a user's
	// delegated token through a mapped client application.
	AppOnly bool `json:"app_only"`
	// Roles is OFFPATH_ENTRA_ROLES, comma-separated: app roles of which an
	// application token must carry one (then idtyp is not needed).
	Roles []string `json:"roles,omitempty"`
}

// loadTenancy reads what the tenants, the ledger and authentication need.
func (c *Handler) loadTenancy(getenv func(string) string, readFile func(string) ([]byte, error)) []error {
	var errs []error
	var err error
	if c.Storage, err = loadStorage(getenv); err != nil {
		errs = append(errs, err)
	}

	// The model catalog: OFFPATH_MODELS (the whole document) overrides the
	// models.json shipped in the app folder.
	doc, source := []byte(getenv("OFFPATH_MODELS")), "OFFPATH_MODELS"
	if len(doc) == 0 {
		source = filepath.Join(c.AppRoot, "models.json")
		if doc, err = readFile(source); err != nil {
			errs = append(errs, fmt.Errorf("read the model catalog: %w (make app copies models.json into the app folder; OFFPATH_MODELS may hold the document instead)", err))
		}
	}
	c.ModelsSource = source
	if len(doc) > 0 {
		if c.Catalog, err = catalog.Parse(doc); err != nil {
			errs = append(errs, fmt.Errorf("%s:\n%w", source, err))
		}
	}

	if c.AdminKeyHashes, err = auth.ParseAdminKeyHashes(getenv("OFFPATH_ADMIN_KEY_SHA256")); err != nil {
		errs = append(errs, fmt.Errorf("OFFPATH_ADMIN_KEY_SHA256: %w", err))
	}
	c.AdminKeys = len(c.AdminKeyHashes)

	if c.Entra, err = loadEntra(getenv); err != nil {
		errs = append(errs, err)
	}

	var ttlErr, boundErr error
	c.AuthCacheTTL, ttlErr = duration(getenv, "OFFPATH_AUTH_CACHE_TTL", 30*time.Second, time.Second, 10*time.Minute)
	c.AuthRevocationBound, boundErr = duration(getenv, "OFFPATH_AUTH_REVOCATION_BOUND", 5*time.Second, time.Second, time.Minute)
	for _, err := range []error{ttlErr, boundErr} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if getenv("OFFPATH_AUTH_REVOCATION_BOUND") == "" {
		c.AuthRevocationBound = min(c.AuthRevocationBound, c.AuthCacheTTL)
	}
	if ttlErr == nil && boundErr == nil && c.AuthRevocationBound > c.AuthCacheTTL {
		errs = append(errs, fmt.Errorf("OFFPATH_AUTH_REVOCATION_BOUND %v: must not exceed OFFPATH_AUTH_CACHE_TTL %v", c.AuthRevocationBound, c.AuthCacheTTL))
	}
	c.AuthFailuresPerMinute = 20
	if s := getenv("OFFPATH_AUTH_FAILURES_PER_MINUTE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 10_000 {
			errs = append(errs, fmt.Errorf("OFFPATH_AUTH_FAILURES_PER_MINUTE %q: must be a whole number from 1 to 10000", s))
		} else {
			c.AuthFailuresPerMinute = n
		}
	}
	return errs
}

// duration reads a duration setting in [lo, hi], def when unset.
func duration(getenv func(string) string, name string, def, lo, hi time.Duration) (time.Duration, error) {
	s := getenv(name)
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < lo || d > hi {
		return def, fmt.Errorf("%s %q: must be a duration from %v to %v", name, s, lo, hi)
	}
	return d, nil
}

func loadStorage(getenv func(string) string) (Storage, error) {
	name := "AzureWebJobsStorage"
	for _, suffix := range []string{"", "__tableServiceUri", "__accountName", "__clientId"} {
		if getenv("OFFPATH_STORAGE"+suffix) != "" {
			name = "OFFPATH_STORAGE"
			break
		}
	}
	s := Storage{Setting: name, ClientID: getenv(name + "__clientId")}
	switch cs, uri, account := getenv(name), getenv(name+"__tableServiceUri"), getenv(name+"__accountName"); {
	case cs != "":
		if !strings.Contains(cs, "=") {
			return s, fmt.Errorf("%s is not a storage connection string (key=value;...)", name)
		}
		s.ConnectionString = cs
	case uri != "":
		u, err := url.Parse(uri)
		if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname()))) {
			return s, fmt.Errorf("%s__tableServiceUri %q: must be an https URL (http only on loopback)", name, uri)
		}
		s.TableServiceURL = strings.TrimRight(uri, "/")
	case account != "":
		if !validAccount(account) {
			return s, fmt.Errorf("%s__accountName %q: must be 3 to 24 lowercase letters and digits", name, account)
		}
		s.TableServiceURL = "https://" + account + ".table.core.windows.net"
	default:
		return s, fmt.Errorf("%s is not set: tenants and the ledger need Table Storage (a connection string, or %s__tableServiceUri or __accountName with a managed identity)", name, name)
	}
	return s, nil
}

func loadEntra(getenv func(string) string) (*Entra, error) {
	issuers, audiences, jwks := list(getenv("OFFPATH_ENTRA_ISSUERS")), list(getenv("OFFPATH_ENTRA_AUDIENCES")), getenv("OFFPATH_ENTRA_JWKS_URL")
	if len(issuers) == 0 && len(audiences) == 0 && jwks == "" {
		return nil, nil
	}
	var errs []error
	if len(issuers) == 0 {
		errs = append(errs, errors.New("OFFPATH_ENTRA_ISSUERS is not set (the other OFFPATH_ENTRA_* settings are)"))
	}
	if len(audiences) == 0 {
		errs = append(errs, errors.New("OFFPATH_ENTRA_AUDIENCES is not set (the other OFFPATH_ENTRA_* settings are)"))
	}
	if u, err := url.Parse(jwks); jwks == "" || err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname()))) {
		errs = append(errs, fmt.Errorf("OFFPATH_ENTRA_JWKS_URL %q: must be an https URL (http only on loopback)", jwks))
	}
	appOnly := true
	switch v := strings.ToLower(strings.TrimSpace(getenv("OFFPATH_ENTRA_APP_ONLY"))); v {
	case "", "true", "1":
	case "false", "0":
		appOnly = false
	default:
		errs = append(errs, fmt.Errorf("OFFPATH_ENTRA_APP_ONLY %q: must be true or false", v))
	}
	return &Entra{Issuers: issuers, Audiences: audiences, JWKSURL: jwks, AppOnly: appOnly, Roles: list(getenv("OFFPATH_ENTRA_ROLES"))}, errors.Join(errs...)
}

func list(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func isLoopback(host string) bool { return host == "127.0.0.1" || host == "localhost" || host == "::1" }

func validAccount(s string) bool {
	if len(s) < 3 || len(s) > 24 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
