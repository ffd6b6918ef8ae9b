package aoaisim

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The managed identity endpoint App Service gives an app: the platform
// sets IDENTITY_ENDPOINT (this server's IdentityPath) and IDENTITY_HEADER
// (Config.IdentityHeader) in the app's environment, and the Azure SDKs'
// managed identity credential asks GET {IDENTITY_ENDPOINT}?api-version=
// 2019-08-01&resource={audience}[&client_id=…] with the header
// X-IDENTITY-HEADER. The simulator issues opaque tokens and accepts them,
// for Azure Resource Manager's audience only, on the Azure Monitor metrics
// API, which (like ARM) accepts no API key.
const (
	// IdentityPath is the managed identity endpoint's path (App Service's).
	IdentityPath = "/msi/token"
	// IdentityAPIVersion is the only api-version App Service's endpoint
	// serves to the SDKs.
	IdentityAPIVersion = "2019-08-01"
	// DefaultIdentityHeader is Config.IdentityHeader's default.
	DefaultIdentityHeader = "aoaisim-identity-header"
	// tokenLifetime is how long an issued token is valid (real time).
	tokenLifetime = 24 * time.Hour
	// systemIdentity is the client id of the system-assigned identity.
	systemIdentity = "00000000-0000-0000-0000-0000000000a1"
)

// armAudiences are Azure Resource Manager's token audiences (the public
// cloud's); a token for the server's own URL is accepted too, as
// OFFPATH_MONITOR_ENDPOINT's audience defaults to the endpoint.
var armAudiences = []string{"https://management.azure.com", "https://management.core.windows.net"}

// identity keeps the tokens issued.
type identity struct {
	mu     sync.Mutex
	tokens map[string]issued
}

type issued struct {
	resource string
	expires  time.Time
}

// IssueToken issues a token for resource (an audience such as
// https://management.azure.com), as the managed identity endpoint does.
func (s *Server) IssueToken(resource string) (token string, expires time.Time) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token, expires = base64.RawURLEncoding.EncodeToString(b), time.Now().Add(tokenLifetime)
	s.identity.mu.Lock()
	defer s.identity.mu.Unlock()
	if s.identity.tokens == nil {
		s.identity.tokens = map[string]issued{}
	}
	s.identity.tokens[token] = issued{resource: audience(resource), expires: expires}
	return token, expires
}

// handleIdentity serves the managed identity endpoint.
func (s *Server) handleIdentity(w http.ResponseWriter, r *http.Request) {
	s.stats.route("identity")
	got := r.Header.Get("X-IDENTITY-HEADER")
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.IdentityHeader)) != 1 {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_request",
			"error_description": "The X-IDENTITY-HEADER header is missing or does not match IDENTITY_HEADER."})
		return
	}
	q := r.URL.Query()
	if v := q.Get("api-version"); v != IdentityAPIVersion {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request",
			"error_description": "api-version " + strconv.Quote(v) + " is not supported; use " + IdentityAPIVersion + "."})
		return
	}
	resource := q.Get("resource")
	if resource == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "error_description": "The resource parameter is required."})
		return
	}
	client := q.Get("client_id")
	if client == "" {
		client = systemIdentity
	}
	token, expires := s.IssueToken(resource)
	writeJSON(w, http.StatusOK, map[string]string{"access_token": token, "expires_on": strconv.FormatInt(expires.Unix(), 10),
		"resource": resource, "token_type": "Bearer", "client_id": client})
}

// armAuthorized reports whether the request carries a token the identity
// endpoint issued for Azure Resource Manager (or this server's own URL),
// not yet expired, and if not, writes ARM's 401.
func (s *Server) armAuthorized(w http.ResponseWriter, r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.identity.mu.Lock()
	t, known := s.identity.tokens[tok]
	s.identity.mu.Unlock()
	switch {
	case !ok || tok == "":
		writeError(w, newAPIError(http.StatusUnauthorized, "AuthenticationFailed", "Authentication failed. The 'Authorization' header is missing."))
	case !known:
		writeError(w, newAPIError(http.StatusUnauthorized, "InvalidAuthenticationToken", "The access token is invalid."))
	case time.Now().After(t.expires):
		writeError(w, newAPIError(http.StatusUnauthorized, "ExpiredAuthenticationToken", "The access token expiry UTC time is earlier than current UTC time."))
	case t.resource != audience("https://"+r.Host) && !slices.Contains(armAudiences, t.resource):
		writeError(w, newAPIError(http.StatusUnauthorized, "InvalidAuthenticationTokenAudience", "The access token has been obtained for wrong audience or resource '"+t.resource+"'."))
	default:
		return true
	}
	s.stats.route("unauthorized")
	return false
}

// audience is a resource or scope without "/.default" and the trailing
// slash, in lower case.
func audience(resource string) string {
	return strings.ToLower(strings.TrimRight(strings.TrimSuffix(resource, "/.default"), "/"))
}
