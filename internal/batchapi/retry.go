package batchapi

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

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
func (c *Client) retry(ctx context.Context, op string, call func(ctx context.Context) error) error {
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
func (c *Client) shouldRetry(err error, n int) (time.Duration, bool) {
	if outcome.Of(err) != outcome.Transient || errors.Is(err, ErrAuth) || errors.Is(err, ErrQuotaFull) ||
		errors.Is(err, context.Canceled) || n >= c.cfg.MaxAttempts {
		return 0, false
	}
	wait := outcome.RetryAfter(err)
	if wait > c.cfg.MaxRetryWait {
		return 0, false
	}
	if wait == 0 {
		wait = backoff(n)
	}
	return wait, true
}

// backoff is 0.5 s × 2^(n-1), capped at 8 s, with ±25 % jitter.
func backoff(n int) time.Duration {
	d := min(500*time.Millisecond<<min(n-1, 4), 8*time.Second)
	return d - d/4 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
