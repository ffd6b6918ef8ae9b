package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/auth"
)

// handler is an endpoint that knows its caller.
type handler func(w http.ResponseWriter, r *http.Request, p auth.Principal)

// authed bounds the query string, authenticates the caller, and tags the
// request's logger with the tenant.
func (s *Server) authed(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(r.URL.RawQuery) > s.o.MaxQuery {
			writeError(w, http.StatusRequestURITooLong, "query_too_long", fmt.Sprintf("the query string is limited to %d bytes", s.o.MaxQuery))
			return
		}
		if s.o.Auth == nil || s.o.Tenants == nil || s.o.Usage == nil {
			writeError(w, http.StatusServiceUnavailable, "unavailable", "this endpoint is not configured")
			return
		}
		ctx := r.Context()
		p, err := s.o.Auth.Authenticate(ctx, r)
		switch {
		case errors.Is(err, auth.ErrUnauthenticated):
			// One answer for every failure: nothing tells a caller whether a
			// tenant or key exists. The reason goes to the log only; it never
			// holds a credential.
			zerolog.Ctx(ctx).Info().Str("reason", err.Error()).Msg("authentication refused")
			w.Header().Set("WWW-Authenticate", `Bearer realm="offpath"`)
			writeError(w, http.StatusUnauthorized, "unauthenticated", "a valid API key or Entra ID access token is required")
			return
		case errors.Is(err, auth.ErrForbidden):
			zerolog.Ctx(ctx).Info().Str("reason", err.Error()).Msg("authentication refused")
			writeError(w, http.StatusForbidden, "tenant_suspended", "this tenant is suspended")
			return
		case err != nil:
			fail(w, r, err)
			return
		}
		log := zerolog.Ctx(ctx).With().Str("tenant", p.TenantID).Bool("admin", p.Admin).Str("auth", string(p.Method)).Logger()
		log.Debug().Msg("authenticated")
		h(w, r.WithContext(log.WithContext(ctx)), p)
	}
}

// admin is authed for the admin credential only.
func (s *Server) admin(h handler) http.HandlerFunc {
	return s.authed(func(w http.ResponseWriter, r *http.Request, p auth.Principal) {
		if !p.Admin {
			writeError(w, http.StatusForbidden, "forbidden", "this endpoint needs the admin credential")
			return
		}
		h(w, r, p)
	})
}

// functionKeyParam is the query parameter that may carry the Functions
// host's function key instead of the x-functions-key header; the host
// forwards it, so every endpoint accepts (and ignores) it.
const functionKeyParam = "code"

// query parses the query string, allowing only the named parameters (and
// the function key), each at most once.
func query(r *http.Request, allowed ...string) (map[string]string, error) {
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, newError(http.StatusBadRequest, "bad_query", "the query string is malformed")
	}
	out := make(map[string]string, len(values))
	for k, v := range values {
		if k == functionKeyParam {
			continue
		}
		if !slices.Contains(allowed, k) {
			return nil, newError(http.StatusBadRequest, "unknown_parameter", fmt.Sprintf("unknown query parameter %q; allowed: %s", clip(k), strings.Join(allowed, ", ")))
		}
		if len(v) != 1 {
			return nil, newError(http.StatusBadRequest, "bad_query", fmt.Sprintf("query parameter %q is given %d times", k, len(v)))
		}
		out[k] = v[0]
	}
	return out, nil
}

// decode reads a JSON body of at most MaxBody bytes into v, refusing
// unknown fields and trailing data. An empty body is allowed when optional.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return newError(http.StatusUnsupportedMediaType, "unsupported_media_type", "send application/json")
		}
	}
	tooLarge := newError(http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the body is limited to %d bytes", s.o.MaxBody))
	if r.ContentLength > s.o.MaxBody {
		return tooLarge
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.o.MaxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("unexpected data after the JSON object")
		}
	}
	var maxErr *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &maxErr):
		return tooLarge
	case errors.Is(err, io.EOF) && optional:
		return nil
	case errors.Is(err, io.EOF):
		return newError(http.StatusBadRequest, "invalid_json", "a JSON body is required")
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return newError(http.StatusBadRequest, "unknown_field", strings.TrimPrefix(err.Error(), "json: "))
	}
	return newError(http.StatusBadRequest, "invalid_json", "the body is not valid JSON for this endpoint: "+clip(strings.TrimPrefix(err.Error(), "json: ")))
}
