package azopenai

import (
	"context"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/ingest"
)

// ChatBody sends a chat completion request body (JSON, its model naming
// deployment) to the deployment, with the same pacing, retries and budget
// as every queue-path call; charge is its admission estimate (prompt plus
// max tokens). A content-filter refusal and any other final 4xx are
// answers (their status and error body); transient failures that outlast
// the budget are outcome errors, as for Summarize.
func (c *QueueClient) ChatBody(ctx context.Context, deployment string, body []byte, charge int64) (batch.Answer, error) {
	var out batch.Answer
	var trace ingest.Trace
	var raw []byte
	err := c.do(ctx, request{
		deployment: deployment,
		operation:  "chat",
		charge:     charge,
		call: func(ctx context.Context, opts ...option.RequestOption) error {
			raw = nil
			return c.oa.Post(ctx, "chat/completions", body, &raw, opts...)
		},
	}, &trace)
	var apiErr *openai.Error
	var sig *refusalSignal
	switch {
	case err == nil:
		out.StatusCode, out.Body = 200, raw
		return out, nil
	case errors.As(err, &sig):
		apiErr = sig.apiErr
	case errors.As(err, &apiErr) && apiErr.StatusCode >= 400 && apiErr.StatusCode < 500 && !transient(err):
	default:
		return out, err
	}
	out.StatusCode = apiErr.StatusCode
	out.Body = fmt.Appendf(nil, `{"error":%s}`, errorJSON(apiErr))
	return out, nil
}

// transient reports whether queueVerdict would retry err or halt on it (a 429,
// 401, 403 or 404 is no answer about the request).
func transient(err error) bool {
	v, _ := queueVerdict(err)
	return v == retry || v == halt
}

// errorJSON is the error object of a failed answer.
func errorJSON(e *openai.Error) string {
	if raw := e.RawJSON(); raw != "" {
		return raw
	}
	return fmt.Sprintf(`{"code":%q,"message":%q}`, e.Code, e.Message)
}
