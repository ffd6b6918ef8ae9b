package azopenai

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/outcome"
)

// attemptContext bounds one attempt: the returned context is cancelled when
// timeout passes before keep is called. A call that returns a body still to
// be read (a download) calls keep once the headers are in, so the timeout
// covers the wait for the server but never cuts a stream short. cancel must
// be called in every case (for a kept stream, when the body is closed).
func attemptContext(ctx context.Context, timeout time.Duration) (actx context.Context, keep func() bool, cancel context.CancelFunc) {
	actx, cancelCause := context.WithCancelCause(ctx)
	timer := time.AfterFunc(timeout, func() {
		cancelCause(fmt.Errorf("no response within %v: %w", timeout, context.DeadlineExceeded))
	})
	return actx, timer.Stop, func() { timer.Stop(); cancelCause(context.Canceled) }
}

// retry runs call, an idempotent request, until it succeeds, fails for good,
// or the budget is spent: at most MaxAttempts attempts, each bounded by
// RequestTimeout, waiting between them what the server asked (Retry-After,
// retry-after-ms) or an exponential backoff. A server-directed wait longer
// than MaxRetryWait is not waited: the error goes back with it as its hint.
// Authorization failures and a full quota are not retried: they do not
// heal in seconds.
func (c *BatchClient) retry(ctx context.Context, op string, call func(ctx context.Context) error) error {
	for n := 1; ; n++ {
		actx, _, cancel := attemptContext(ctx, c.cfg.RequestTimeout)
		err := call(actx)
		cause := context.Cause(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", op, ctx.Err())
		}
		if errors.Is(cause, context.DeadlineExceeded) {
			err = cause
		}
		err = classify(err)
		wait, again := c.shouldRetry(err, n)
		if !again {
			return fmt.Errorf("%s: %w", op, err)
		}
		c.log.Debug().Str("op", op).Int("attempt", n).Dur("wait_ms", wait).Err(err).Msg("retrying")
		if err := sleep(ctx, wait); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
}

// shouldRetry decides whether attempt n's classified error is worth another
// attempt, and after how long.
func (c *BatchClient) shouldRetry(err error, n int) (time.Duration, bool) {
	if outcome.Of(err) != outcome.Transient || errors.Is(err, batch.ErrAzureAuth) || errors.Is(err, batch.ErrQuotaFull) ||
		errors.Is(err, context.Canceled) || n >= c.cfg.MaxAttempts {
		return 0, false
	}
	hint := outcome.RetryAfter(err)
	if hint > c.cfg.MaxRetryWait {
		return 0, false
	}
	return c.backoff.wait(n, hint), true
}
