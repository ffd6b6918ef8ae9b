package outcome_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/outcome"
)

func TestOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want outcome.Kind
	}{
		{"nil is done", nil, outcome.Done},
		{"refused", outcome.Refuse("content_filter"), outcome.Refused},
		{"rejected", outcome.Reject("unknown tenant", nil), outcome.Rejected},
		{"wrapped rejection keeps its kind", fmt.Errorf("ingest: %w", outcome.Reject("etag changed", errors.New("412"))), outcome.Rejected},
		{"plain error is transient", errors.New("connection reset"), outcome.Transient},
		{"deadline is transient", context.DeadlineExceeded, outcome.Transient},
		{"explicit retry", outcome.Retry(errors.New("429"), time.Second), outcome.Transient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := outcome.Of(tt.err); got != tt.want {
				t.Errorf("Of(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestError_MessageAndUnwrap(t *testing.T) {
	t.Parallel()
	cause := errors.New("412 precondition failed")
	err := outcome.Reject("blob changed", cause)
	if got, want := err.Error(), "rejected: blob changed: 412 precondition failed"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, cause) {
		t.Error("errors.Is(Reject(..., cause), cause) = false, want true")
	}
	if got := outcome.RetryAfter(fmt.Errorf("call: %w", outcome.Retry(cause, 1500*time.Millisecond))); got != 1500*time.Millisecond {
		t.Errorf("RetryAfter = %v, want 1.5s", got)
	}
	if got := outcome.RetryAfter(cause); got != 0 {
		t.Errorf("RetryAfter(plain) = %v, want 0", got)
	}
}
