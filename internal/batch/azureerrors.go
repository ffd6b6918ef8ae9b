package batch

import (
	"errors"
	"fmt"
)

// Azure's answers the control plane tests with errors.Is. The adapter
// (package azopenai) wraps them in the errors it returns, each also
// classified for outcome.Of.
var (
	// ErrQuotaFull: the deployment's enqueued-token quota cannot take the job
	// now (HTTP 400 token_limit_exceeded at create, or a batch failed with it
	// during validation). Hold the job and resubmit later; the input file is
	// still good. Transient.
	ErrQuotaFull = errors.New("enqueued-token quota full")
	// ErrAmbiguous: a create may or may not have reached Azure. The next
	// CreateBatch for the same submission must set MaybeCreated. Transient.
	ErrAmbiguous = errors.New("batch create outcome unknown")
	// ErrAzureAuth: HTTP 401/403, a configuration problem (key, role,
	// scope). It is transient so that jobs are held rather than lost while
	// it is fixed; alert on it.
	ErrAzureAuth = errors.New("not authorized")
	// ErrAzureNotFound: HTTP 404, the file or batch does not exist (or the
	// endpoint is wrong). Rejected.
	ErrAzureNotFound = errors.New("not found")
	// ErrAzureConflict: HTTP 409, e.g. cancelling a batch that is finalizing
	// or done; or a lookup found our submission key on a batch with another
	// input file. Rejected.
	ErrAzureConflict = errors.New("conflict")
)

// QuotaError details ErrQuotaFull. Token counts are -1 when Azure did not
// report them.
type QuotaError struct {
	Status            int // HTTP status of the refused create; 0 for a failed batch
	Code              string
	Message           string
	EnqueuedTokens    int64 // deployment-enqueued-tokens: this file's estimate
	MaxEnqueuedTokens int64 // deployment-maximum-enqueued-tokens
}

func (e *QuotaError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s: HTTP %d %s: %s", ErrQuotaFull, e.Status, e.Code, clipAzure(e.Message))
	}
	return fmt.Sprintf("%s: %s: %s", ErrQuotaFull, e.Code, clipAzure(e.Message))
}

// Is makes errors.Is(err, ErrQuotaFull) hold.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaFull }

// clipAzure bounds a message from Azure in an error.
func clipAzure(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
