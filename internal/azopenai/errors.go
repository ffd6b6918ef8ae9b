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

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/outcome"
)

// ErrContentFilter: HTTP 400 content_filter, the prompt was blocked. A
// result, not a failure: the queue calls turn it into a refusal. The other
// sentinels are the control plane's (package batch: ErrQuotaFull,
// ErrAmbiguous, ErrAzureAuth, ErrAzureNotFound, ErrAzureConflict); every
// error this package returns is also classified for outcome.Of (see the
// package documentation for the table).
var ErrContentFilter = errors.New("content filter")

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
		return outcome.Retry(&batch.QuotaError{Status: st, Code: apiErr.Code, Message: apiErr.Message,
			EnqueuedTokens:    headerInt(apiErr.Response, "deployment-enqueued-tokens"),
			MaxEnqueuedTokens: headerInt(apiErr.Response, "deployment-maximum-enqueued-tokens")}, 0)
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return outcome.Retry(fmt.Errorf("%w: %w", batch.ErrAzureAuth, desc), 0)
	case st == http.StatusNotFound:
		return outcome.Reject("azure: not found", fmt.Errorf("%w: %w", batch.ErrAzureNotFound, desc))
	case st == http.StatusConflict:
		return outcome.Reject("azure: conflict", fmt.Errorf("%w: %w", batch.ErrAzureConflict, desc))
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
