// Package outcome is the one vocabulary in which every offpath function says
// how the processing of one trigger ended:
//
//	Done       the work is finished; the host completes the trigger.
//	Refused    a content filter declined: a result, recorded and metered, never retried.
//	Rejected   the input can never succeed (malformed, unknown tenant, blob gone):
//	           recorded, never retried.
//	Transient  infrastructure failed (429, 5xx, timeout, storage hiccup): the host
//	           retries, and Service Bus dead-letters after MaxDeliveryCount.
//
// Functions return a plain error for transient failures (unknown errors are
// transient, so a forgotten classification retries rather than loses work) and
// Refuse or Reject for the two outcomes that are results. The protocol layer
// classifies once, at the boundary, with Of.
package outcome

import (
	"errors"
	"time"
)

// Kind is how an invocation ended.
type Kind int

// The outcomes, in the order above.
const (
	Done Kind = iota
	Refused
	Rejected
	Transient
)

func (k Kind) String() string {
	switch k {
	case Done:
		return "done"
	case Refused:
		return "refused"
	case Rejected:
		return "rejected"
	case Transient:
		return "transient"
	}
	return "unknown"
}

// Error carries a non-Done outcome through ordinary error returns.
type Error struct {
	Kind Kind
	// Reason is a short, log-safe explanation (never document or prompt text).
	Reason string
	// RetryAfter, for Transient, is how long the caller should wait if known.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	msg := e.Kind.String()
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Refuse reports a content-filter refusal: a result, not a failure.
func Refuse(reason string) error {
	return &Error{Kind: Refused, Reason: reason}
}

// Reject reports input that can never succeed; err may be nil.
func Reject(reason string, err error) error {
	return &Error{Kind: Rejected, Reason: reason, Err: err}
}

// Retry marks err as transient explicitly, with an optional wait hint. Plain
// errors are transient already; Retry exists to carry RetryAfter and to make
// intent visible where a reader might wonder.
func Retry(err error, after time.Duration) error {
	return &Error{Kind: Transient, RetryAfter: after, Err: err}
}

// Of classifies err: nil is Done, an *Error its own Kind, anything else
// Transient.
func Of(err error) Kind {
	if err == nil {
		return Done
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Transient
}

// RetryAfter returns the wait hint carried by err, or zero.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}
