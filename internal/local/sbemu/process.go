package sbemu

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Defaults of ProcessOptions, as in host.json's extensions.serviceBus.
const (
	DefaultMaxConcurrentCalls = 16
	DefaultMaxAutoLockRenewal = 5 * time.Minute
	DefaultPollInterval       = time.Second
)

const (
	// firstPoll is the wait after the first empty receive; it doubles up to
	// PollInterval.
	firstPoll = 20 * time.Millisecond
	// settleTimeout bounds a settle or renew call, which runs on a context
	// that outlives Process's.
	settleTimeout = 30 * time.Second
	// minRenewWait keeps a failing renewal from spinning.
	minRenewWait = 50 * time.Millisecond
)

// ProcessOptions mirror the host.json settings of a serviceBusTrigger.
type ProcessOptions struct {
	// MaxConcurrentCalls caps the handlers in flight (maxConcurrentCalls).
	// Default (and for 0 or less) 16.
	MaxConcurrentCalls int
	// MaxAutoLockRenewal is how long after receipt the lock of a running
	// handler's message is still renewed (maxAutoLockRenewalDuration). A
	// handler that runs longer loses its lock and the message is delivered
	// again while it runs, as on Azure. Default 5 minutes; negative disables
	// renewal (so host.json's "00:00:00" maps to a negative value here).
	MaxAutoLockRenewal time.Duration
	// PollInterval is the longest wait between receives on an empty queue
	// (or after an error). Default (and for 0 or less) 1 second.
	PollInterval time.Duration
	// Settled, when set, is told how each delivery Process ran was settled,
	// once the settlement is done (or has failed). It is called from the
	// goroutine that ran the handler and must not block for long.
	Settled func(Settlement)
}

// Outcomes of a Settlement.
const (
	Completed    = "completed"
	Abandoned    = "abandoned"
	DeadLettered = "deadlettered"
	// Unsettled: the settle call failed (the lock was lost, storage was
	// down), so the message will be delivered again once its lock expires;
	// or the handler settled it itself.
	Unsettled = "unsettled"
)

// Settlement is what became of one delivery that Process ran.
type Settlement struct {
	Queue         string
	MessageID     string
	DeliveryCount int
	// Outcome is Completed, Abandoned, DeadLettered or Unsettled.
	Outcome string
	// HandlerErr is the handler's error, if it failed.
	HandlerErr error
}

// Handler processes one delivery. Returning nil completes the message; an
// error (or a panic) abandons it.
type Handler func(ctx context.Context, d *Delivery) error

// Process receives from queue and runs handle on each message until ctx is
// done, as the Functions host runs a serviceBusTrigger function: up to
// MaxConcurrentCalls handlers at once, each message's lock renewed while its
// handler runs, Complete when the handler returns nil and Abandon when it
// fails or panics. An empty queue is polled with a backoff up to
// PollInterval; receive errors (Azurite down, say) are logged and retried.
// Handlers get ctx itself: when it ends, Process stops receiving, waits for
// the handlers in flight and settles their messages by what they return, so a
// handler cut off by ctx should return its error and have the message
// abandoned. Process returns nil once ctx is done, and an error only for a
// queue name it cannot serve.
func (b *Broker) Process(ctx context.Context, queue string, o ProcessOptions, handle Handler) error {
	if _, err := resolve(queue); err != nil {
		return err
	}
	if handle == nil {
		return errors.New("sbemu: process: nil handler")
	}
	if o.MaxConcurrentCalls <= 0 {
		o.MaxConcurrentCalls = DefaultMaxConcurrentCalls
	}
	if o.MaxAutoLockRenewal == 0 {
		o.MaxAutoLockRenewal = DefaultMaxAutoLockRenewal
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}

	slots := make(chan struct{}, o.MaxConcurrentCalls)
	var wg sync.WaitGroup
	defer wg.Wait()
	wait := min(firstPoll, o.PollInterval)
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		d, err := b.Receive(ctx, queue)
		if d == nil {
			<-slots
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				b.log.Warn().Err(err).Str("queue", queue).Msg("sbemu: receive")
				wait = o.PollInterval
			}
			if !sleep(ctx, wait) {
				return nil
			}
			wait = min(wait*2, o.PollInterval)
			continue
		}
		wait = min(firstPoll, o.PollInterval)
		wg.Go(func() {
			defer func() { <-slots }()
			b.run(ctx, d, o, handle)
		})
	}
}

// run calls the handler with the lock renewed, then settles the message.
func (b *Broker) run(ctx context.Context, d *Delivery, o ProcessOptions, handle Handler) {
	log := b.log.With().Str("queue", d.Queue).Str("message_id", d.MessageID).
		Int64("sequence_number", d.SequenceNumber).Int("delivery_count", d.DeliveryCount).Logger()
	stop, renewed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(renewed)
		b.autoRenew(ctx, d, o.MaxAutoLockRenewal, stop, log)
	}()
	err := call(ctx, d, handle, log)
	close(stop)
	<-renewed

	outcome := Unsettled
	defer func() {
		if o.Settled != nil {
			o.Settled(Settlement{Queue: d.Queue, MessageID: d.MessageID, DeliveryCount: d.DeliveryCount, Outcome: outcome, HandlerErr: err})
		}
	}()
	if d.settled() {
		return // the handler settled it itself
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	if err == nil {
		if cerr := b.Complete(sctx, d); cerr != nil {
			log.Warn().Err(cerr).Msg("sbemu: complete")
			return
		}
		outcome = Completed
		return
	}
	log.Debug().Err(err).Msg("sbemu: handler failed; abandoning the message")
	dead, aerr := b.abandon(sctx, d, err.Error())
	switch {
	case aerr != nil:
		log.Warn().Err(aerr).Msg("sbemu: abandon")
	case dead:
		outcome = DeadLettered
	default:
		outcome = Abandoned
	}
}

// call runs the handler, turning a panic into an error.
func call(ctx context.Context, d *Delivery, handle Handler, log zerolog.Logger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error().Str("stack", string(debug.Stack())).Msgf("sbemu: handler panicked: %v", r)
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return handle(ctx, d)
}

// autoRenew renews d's lock, each time half of what is left of it has
// passed, until stop is closed or limit has passed since receipt. Renewing
// by what is left rather than on a fixed tick absorbs slow renewals.
func (b *Broker) autoRenew(ctx context.Context, d *Delivery, limit time.Duration, stop <-chan struct{}, log zerolog.Logger) {
	if limit < 0 {
		return
	}
	deadline := time.Now().Add(limit)
	for {
		wait := max(time.Until(d.LockedUntil())/2, minRenewWait)
		t := time.NewTimer(wait)
		select {
		case <-stop:
			t.Stop()
			return
		case now := <-t.C:
			if now.After(deadline) {
				return
			}
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		err := b.RenewLock(rctx, d)
		cancel()
		if errors.Is(err, ErrLockLost) {
			if d.settled() {
				return // the handler settled it itself
			}
			log.Warn().Err(err).Msg("sbemu: lock lost while the handler runs; the message will be delivered again")
			return
		}
		if err != nil {
			log.Warn().Err(err).Msg("sbemu: renew lock")
		}
	}
}

// sleep waits for d or until ctx is done, and reports whether ctx is alive.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
