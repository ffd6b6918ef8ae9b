package config

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/catalog"
)

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
	AppOnly *bool `json:"app_only"`
	// Roles is OFFPATH_ENTRA_ROLES, comma-separated: app roles of which an
	// application token must carry one (then idtyp is not needed).
	Roles []string `json:"roles,omitempty"`
}

// parseTenancy reads what the tenants and authentication need: the model
// catalog, the admin keys, Entra ID, the credential cache.
func (c *Handler) parseTenancy(getenv func(string) string, readFile func(string) ([]byte, error)) []error {
	var errs []error
	var err error
	// The model catalog: OFFPATH_MODELS (the whole document) overrides the
	// models.json shipped in the app folder.
	doc, source := []byte(getenv("OFFPATH_MODELS")), "OFFPATH_MODELS"
	if len(doc) == 0 {
		source = filepath.Join(cmp.Or(c.AppRoot, DefaultAppRoot), "models.json")
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

	if c.Entra, err = parseEntra(getenv); err != nil {
		errs = append(errs, err)
	}

	if c.AuthCacheTTL, err = duration(getenv, "OFFPATH_AUTH_CACHE_TTL", time.Second, 10*time.Minute); err != nil {
		errs = append(errs, err)
	}
	if c.AuthRevocationBound, err = duration(getenv, "OFFPATH_AUTH_REVOCATION_BOUND", time.Second, time.Minute); err != nil {
		errs = append(errs, err)
	}
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

func parseEntra(getenv func(string) string) (*Entra, error) {
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
	if jwks == "" || !httpsURL(jwks) {
		errs = append(errs, fmt.Errorf("OFFPATH_ENTRA_JWKS_URL %q: must be an https URL (http only on loopback)", jwks))
	}
	e := &Entra{Issuers: issuers, Audiences: audiences, JWKSURL: jwks, Roles: list(getenv("OFFPATH_ENTRA_ROLES"))}
	switch v := strings.ToLower(strings.TrimSpace(getenv("OFFPATH_ENTRA_APP_ONLY"))); v {
	case "":
	case "true", "1":
		e.AppOnly = new(true)
	case "false", "0":
		e.AppOnly = new(false)
	default:
		errs = append(errs, fmt.Errorf("OFFPATH_ENTRA_APP_ONLY %q: must be true or false", v))
	}
	return e, errors.Join(errs...)
}
