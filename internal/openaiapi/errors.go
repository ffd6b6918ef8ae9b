package openaiapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tenant"
)

// apiError is an answer in OpenAI's error shape:
// {"error":{"message","type","param","code"}}, plus the input line an
// upload was refused at, as in Azure's batch errors.
type apiError struct {
	status  int
	code    string
	message string
	param   string
	line    int
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func invalidParam(message, param string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "invalid_request", message: message, param: param}
}

func notFound(what string) *apiError {
	return &apiError{status: http.StatusNotFound, code: "not_found", message: "No such " + what}
}

type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
		Line    *int    `json:"line,omitempty"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, e *apiError) {
	var b errorBody
	b.Error.Message, b.Error.Code = e.message, e.code
	b.Error.Type = "invalid_request_error"
	if e.status >= 500 {
		b.Error.Type = "server_error"
	}
	if e.param != "" {
		b.Error.Param = &e.param
	}
	if e.line > 0 {
		b.Error.Line = &e.line
	}
	writeJSON(w, e.status, b)
}

// fail answers err: an *apiError as it says, the batch service's refusals
// by kind, anything else as a dependency failing (503, retried by the
// SDKs), logged without the request's content.
func fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	var inv *batch.InvalidError
	var budget *ledger.BudgetError
	switch {
	case errors.As(err, &ae):
		writeError(w, ae)
	case errors.As(err, &inv) && inv.Code == "too_large":
		writeError(w, &apiError{status: http.StatusRequestEntityTooLarge, code: inv.Code, message: inv.Message})
	case errors.As(err, &inv):
		writeError(w, &apiError{status: http.StatusBadRequest, code: inv.Code, message: inv.Message})
	case errors.Is(err, batch.ErrNotFound), errors.Is(err, tenant.ErrNotFound):
		writeError(w, notFound("batch"))
	case errors.Is(err, tenant.ErrSuspended):
		writeError(w, &apiError{status: http.StatusForbidden, code: "tenant_suspended", message: "this tenant is suspended"})
	case errors.Is(err, batch.ErrAliasNotAllowed):
		writeError(w, &apiError{status: http.StatusBadRequest, code: "model_not_found", message: "this tenant may not use the file's model"})
	case errors.As(err, &budget):
		writeError(w, &apiError{status: http.StatusForbidden, code: "budget_exceeded", message: fmt.Sprintf(
			"this batch and the tenant's unfinished jobs need an estimated %d tokens; %d of the %s budget of %d are used",
			budget.Requested, budget.Used, budget.Month, budget.Budget)})
	case errors.Is(err, batch.ErrKeyReused):
		writeError(w, &apiError{status: http.StatusConflict, code: "idempotency_key_reused", message: "this input file (or Idempotency-Key) " +
			"already made a batch with other parameters; upload the file again, or send another Idempotency-Key, to run it again"})
	case errors.Is(err, batch.ErrFinished):
		writeError(w, &apiError{status: http.StatusBadRequest, code: "invalid_request", message: "the batch has ended; there is nothing to cancel"})
	default:
		zerolog.Ctx(r.Context()).Error().Err(err).Msg("request failed")
		w.Header().Set("Retry-After", "5")
		writeError(w, &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "a dependency is unavailable; try again shortly"})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// clip keeps hostile input short when a message quotes it.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
