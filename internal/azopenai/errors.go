package azopenai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/offpath/offpath/internal/outcome"
)

// Sentinels the control plane tests with errors.Is. Every error this package
// returns is also classified for outcome.Of (see the package documentation
// for the table).
var (
	// ErrQuotaFull: the deployment's enqueued-token quota cannot take the job
	// now (HTTP 400 token_limit_exceeded at create, or a batch failed with it
	// during validation). Hold the job and resubmit later; the input file is
	// still good. Transient.
	ErrQuotaFull = errors.New("enqueued-token quota full")
	// ErrAmbiguous: a create may or may not have reached Azure. The next
	// CreateBatch for the same submission must set MaybeCreated. Transient.
	ErrAmbiguous = errors.New("batch create outcome unknown")
	// ErrAuth: HTTP 401/403, a configuration problem (key, role, scope). It is
	// transient so that jobs are held rather than lost while it is fixed;
	// alert on it.
	ErrAuth = errors.New("not authorized")
	// ErrNotFound: HTTP 404, the file or batch does not exist (or the
	// endpoint is wrong). Rejected.
	ErrNotFound = errors.New("not found")
	// ErrConflict: HTTP 409, e.g. cancelling a batch that is finalizing or
	// done; or a lookup found our submission key on a batch with another
	// input file. Rejected.
	ErrConflict = errors.New("conflict")
	// ErrContentFilter: HTTP 400 content_filter, the prompt was blocked. A
	// result, not a failure: the queue calls turn it into a refusal.
	ErrContentFilter = errors.New("content filter")
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
		return fmt.Sprintf("%s: HTTP %d %s: %s", ErrQuotaFull, e.Status, e.Code, clip(e.Message))
	}
	return fmt.Sprintf("%s: %s: %s", ErrQuotaFull, e.Code, clip(e.Message))
}

// Is makes errors.Is(err, ErrQuotaFull) hold.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaFull }

// classify turns an error of an SDK call into this package's vocabulary,
// once for every call, the queue's and the batch path's: an *openai.Error by
// status and code, anything else (connection reset, EOF, attempt timeout) as
// transient.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		if errors.Is(err, context.Canceled) {
			return err // the caller's own cancellation; Of calls it transient
		}
		return outcome.Retry(err, 0)
	}
	desc := fmt.Errorf("HTTP %d %s: %s: %w", apiErr.StatusCode, cmpCode(apiErr.Code), clip(apiErr.Message), err)
	switch st := apiErr.StatusCode; {
	case st == http.StatusBadRequest && apiErr.Code == "content_filter":
		return &outcome.Error{Kind: outcome.Refused, Reason: "content_filter", Err: fmt.Errorf("%w: %w", ErrContentFilter, desc)}
	case st == http.StatusBadRequest && isTokenLimit(apiErr):
		return outcome.Retry(&QuotaError{Status: st, Code: apiErr.Code, Message: apiErr.Message,
			EnqueuedTokens:    headerInt(apiErr.Response, "deployment-enqueued-tokens"),
			MaxEnqueuedTokens: headerInt(apiErr.Response, "deployment-maximum-enqueued-tokens")}, 0)
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return outcome.Retry(fmt.Errorf("%w: %w", ErrAuth, desc), 0)
	case st == http.StatusNotFound:
		return outcome.Reject("azure: not found", fmt.Errorf("%w: %w", ErrNotFound, desc))
	case st == http.StatusConflict:
		return outcome.Reject("azure: conflict", fmt.Errorf("%w: %w", ErrConflict, desc))
	case st == http.StatusRequestTimeout || st == http.StatusTooManyRequests || st >= 500:
		return outcome.Retry(desc, retryAfter(apiErr.Response))
	default:
		return outcome.Reject(fmt.Sprintf("azure: HTTP %d %s", st, cmpCode(apiErr.Code)), desc)
	}
}

// isTokenLimit finds token_limit_exceeded in the code, the message or the raw
// body: Azure's docs do not say which field carries it.
func isTokenLimit(e *openai.Error) bool {
	const code = "token_limit_exceeded"
	return e.Code == code || strings.Contains(e.Message, code) || strings.Contains(e.RawJSON(), code)
}

// retryAfter reads retry-after-ms, then Retry-After (seconds or HTTP date).
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	if v := resp.Header.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// remaining reads an x-ratelimit-remaining-* value: -1 when absent or not
// a count (Azure has sent -1).
func remaining(v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

func headerInt(resp *http.Response, name string) int64 {
	if resp == nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(resp.Header.Get(name)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func cmpCode(code string) string {
	if code == "" {
		return "(no code)"
	}
	return code
}

// clip bounds service messages in errors and logs.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
