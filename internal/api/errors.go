package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tenant"
)

// errorBody is the one error shape: {"error":{"code","message"}}.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// apiError is an error with its status and code, for handlers to return.
type apiError struct {
	status        int
	code, message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func newError(status int, code, message string) *apiError {
	return &apiError{status: status, code: code, message: message}
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	var b errorBody
	b.Error.Code, b.Error.Message = code, message
	writeJSON(w, status, b)
}

// fail answers err: an *apiError as it says; domain errors by kind; anything
// else is a dependency failing (storage, mostly), logged and answered 503 so
// that the caller tries again.
func fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		writeError(w, ae.status, ae.code, ae.message)
	case errors.Is(err, tenant.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", firstLine(err))
	case errors.Is(err, tenant.ErrConflict):
		writeError(w, http.StatusConflict, "conflict", firstLine(err))
	case errors.Is(err, tenant.ErrInvalid), errors.Is(err, ledger.ErrBadMonth):
		writeError(w, http.StatusBadRequest, "invalid", strings.ReplaceAll(err.Error(), "\n", "; "))
	default:
		zerolog.Ctx(r.Context()).Error().Err(err).Msg("request failed")
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "a dependency is unavailable; try again shortly")
	}
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// methods routes by method. OPTIONS answers 204 with Allow; any other
// method it does not list is 405 with Allow, in the API's error shape.
type methods map[string]http.HandlerFunc

func (m methods) serve(w http.ResponseWriter, r *http.Request) {
	if h, ok := m[r.Method]; ok {
		h(w, r)
		return
	}
	var allow []string
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if _, ok := m[method]; ok {
			allow = append(allow, method)
		}
	}
	w.Header().Set("Allow", strings.Join(append(allow, http.MethodOptions), ", "))
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", clip(r.Method)+" is not allowed here; use "+strings.Join(allow, " or "))
}

// clip keeps hostile input short when a message quotes it.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
