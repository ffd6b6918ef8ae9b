package azopenai

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/outcome"
	"github.com/offpath/offpath/internal/ratelimit"
)

// request is one logical request, retried as one.
type request struct {
	deployment string
	operation  string // "embeddings", "chat"
	charge     int64  // tokens the service charges at admission
	// call makes one attempt with opts. It returns the error of the attempt.
	call func(ctx context.Context, opts ...option.RequestOption) error
}

// do runs req until it succeeds, is refused or rejected, or the budget is
// spent. A refusal is returned as *refusalSignal for the caller to complete
// with usage; other failures are outcome errors.
func (c *QueueClient) do(ctx context.Context, req request, trace *ingest.Trace) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = c.cfg.Now().Add(c.cfg.RetryBudget)
	}
	log := c.log.With().Str("deployment", req.deployment).Str("operation", req.operation).Logger()
	failures := 0 // attempts that failed other than by a 429
	for attempt := 1; ; attempt++ {
		if c.limiter != nil {
			if err := c.limiter.Wait(ctx, req.deployment, req.charge); err != nil {
				return fmt.Errorf("%s %s: %w", req.operation, req.deployment, err)
			}
		}
		actx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
		var resp *http.Response
		err := req.call(actx, option.WithResponseInto(&resp))
		cancel()
		c.observe(req.deployment, resp, err)
		trace.Attempts++
		if err == nil {
			trace.Requests++
			return nil
		}
		if ctx.Err() != nil { // the caller's deadline or cancellation, not the attempt's
			return outcome.Retry(fmt.Errorf("%s %s: %w", req.operation, req.deployment, ctx.Err()), 0)
		}
		v, hint := queueVerdict(err)
		var apiErr *openai.Error
		isAPI := errors.As(err, &apiErr)
		if isAPI && apiErr.StatusCode == 429 {
			trace.Throttled++
		} else {
			failures++
		}
		switch v {
		case refused:
			trace.Requests++ // answered: the answer is the refusal
			return &refusalSignal{apiErr: apiErr}
		case rejected:
			return outcome.Reject("model request rejected", describe(req, err))
		case halt:
			log.Error().Int("status", apiErr.StatusCode).Str("code", apiErr.Code).Msg("model request failed: configuration")
			return outcome.Retry(describe(req, err), hint)
		}
		wait := c.backoff.wait(attempt, hint)
		left := deadline.Sub(c.cfg.Now())
		// A 429 says when to come back: only the time budget bounds those
		// waits, so a throttled burst is waited out rather than abandoned.
		if failures >= c.cfg.MaxAttempts || wait+c.cfg.MinAttemptTime > left {
			log.Warn().Err(err).Int("attempts", attempt).Dur("wait_ms", wait).Dur("left_ms", left).Msg("model request: retry budget spent")
			return outcome.Retry(fmt.Errorf("after %d attempts: %w", attempt, describe(req, err)), wait)
		}
		log.Debug().Err(err).Int("attempt", attempt).Dur("wait_ms", wait).Msg("model request: retrying")
		if err := c.cfg.Sleep(ctx, wait); err != nil {
			return outcome.Retry(fmt.Errorf("%s %s: %w", req.operation, req.deployment, err), 0)
		}
		trace.Waited += wait
	}
}

// describe names a failed attempt with the service's status, code and
// message (which carry no prompt text; the SDK's own Error() leaves them out).
func describe(req request, err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return fmt.Errorf("%s %s: HTTP %d %s: %s: %w", req.operation, req.deployment, apiErr.StatusCode, apiErr.Code, clip(apiErr.Message), err)
	}
	return fmt.Errorf("%s %s: %w", req.operation, req.deployment, err)
}

// refusalSignal carries a prompt refusal from do to the operation, which
// adds the usage so far and turns it into an outcome.
type refusalSignal struct{ apiErr *openai.Error }

func (r *refusalSignal) Error() string { return "content filter" }

// refuse builds the outcome.Refused error for a refusal.
func refuse(r *ingest.Refusal) error {
	return &outcome.Error{Kind: outcome.Refused, Reason: "content_filter: " + r.Stage, Err: r}
}

// observer is a Limiter that also takes what the service says about its
// room (*ratelimit.Set is one).
type observer interface {
	Observe(deployment string, s ratelimit.Signal)
}

// observe tells the limiter what an attempt's answer said: its
// x-ratelimit-remaining-tokens and -requests, and whether it was a 429 and
// for how long. Attempts that got no answer say nothing.
func (c *QueueClient) observe(deployment string, resp *http.Response, err error) {
	o, ok := c.limiter.(observer)
	if !ok {
		return
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) && apiErr.Response != nil {
		resp = apiErr.Response
	}
	if resp == nil {
		return
	}
	s := ratelimit.Signal{
		RemainingTokens:   remaining(resp.Header.Get("x-ratelimit-remaining-tokens")),
		RemainingRequests: remaining(resp.Header.Get("x-ratelimit-remaining-requests")),
		Throttled:         resp.StatusCode == http.StatusTooManyRequests,
	}
	if s.Throttled {
		s.RetryAfter = retryAfter(resp)
	} else if resp.StatusCode >= 300 {
		return // the counts of an answer that is neither admitted nor throttled mean nothing
	}
	o.Observe(deployment, s)
}
