package aoaisim

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// apiError is an error reply in Azure's shape:
//
//	{"error":{"code":"...","message":"...","param":null,"type":null}}
//
// code, message, param and type are always present (null when unset), as in
// Azure's replies; status, innererror and inner_error only when set.
type apiError struct {
	status int // HTTP status; not serialised

	Code       string  `json:"code"`
	Message    string  `json:"message"`
	Param      *string `json:"param"`
	Type       *string `json:"type"`
	Status     int     `json:"status,omitempty"`
	InnerError any     `json:"innererror,omitempty"`
	InnerSpec  any     `json:"inner_error,omitempty"`
}

type errorEnvelope struct {
	Error *apiError `json:"error"`
}

func strPtr(s string) *string { return &s }

func newAPIError(status int, code, message string) *apiError {
	return &apiError{status: status, Code: code, Message: message}
}

// invalidRequest is a 400 with OpenAI's invalid_request_error type, naming the
// offending parameter.
func invalidRequest(param, message string) *apiError {
	e := newAPIError(http.StatusBadRequest, "invalid_request", message)
	e.Type = strPtr("invalid_request_error")
	if param != "" {
		e.Param = strPtr(param)
	}
	return e
}

// Messages of Azure's generic errors, as the service words them.
const (
	msgUnauthorized = "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."
	msgNotFound     = "Resource not found"
	msgNoDeployment = "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."
	msgServerError  = "The server had an error while processing your request. Sorry about that!"
	msgUnavailable  = "The service is temporarily unable to process your request. Please try again later."
)

func errUnauthorized() *apiError {
	return newAPIError(http.StatusUnauthorized, "401", msgUnauthorized)
}

func errNotFound() *apiError { return newAPIError(http.StatusNotFound, "404", msgNotFound) }

func errNoDeployment() *apiError {
	return newAPIError(http.StatusNotFound, "DeploymentNotFound", msgNoDeployment)
}

func errOperationNotSupported(operation, model string) *apiError {
	return newAPIError(http.StatusBadRequest, "OperationNotSupported",
		"The "+operation+" operation does not work with the specified model, "+model+". Please choose different model and try again. You can learn more about which models can be used with each operation here: https://go.microsoft.com/fwlink/?linkid=2197993.")
}

func errFault(status int) *apiError {
	if status == http.StatusServiceUnavailable {
		return newAPIError(status, "ServiceUnavailable", msgUnavailable)
	}
	return newAPIError(http.StatusInternalServerError, "InternalServerError", msgServerError)
}

// writeJSON writes v with status. Encoding errors cannot happen for the
// simulator's own types; a failed write means the client went away.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"InternalServerError","message":"encode response","param":null,"type":null}}`)
	}
	writeBody(w, status, body)
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, errorEnvelope{Error: e})
}
