package auth

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// epoch follows the credential epoch, a value storage changes with every
// change to any tenant, so that what this instance has cached is never
// trusted longer than the revocation bound after a change made anywhere.
//
// The epoch is read in the background, one read at a time on its own
// context and timeout, from half the bound on; under traffic it is always
// younger than the bound and no request waits for it. A request that finds
// it older (an idle instance) waits for the read. When the read shows a
// change, the generation moves and every cached entry of an older one is
// dropped. If the epoch cannot be read, cached entries keep their own
// lifetime (the cache TTL): the bound holds while storage answers.
type epoch struct {
	read    func(context.Context) (string, error)
	bound   time.Duration
	timeout time.Duration
	maxWait time.Duration // longest backoff after failed reads
	now     func() time.Time

	gen atomic.Uint64

	mu        sync.Mutex
	value     string
	known     bool
	confirmed time.Time // when the last successful read started
	failures  int
	retryAt   time.Time
	inflight  chan struct{}
}

// sync returns the generation cached entries must carry to be used,
// having made sure, if storage answers, that the epoch was confirmed by a
// read started less than the bound before now.
func (e *epoch) sync(ctx context.Context) uint64 {
	e.mu.Lock()
	now := e.now()
	if !e.known || now.Sub(e.confirmed) >= e.bound/2 {
		e.startLocked(now) // ahead of the bound, in the background
	}
	// A read already in flight may have started too early to count: then
	// a second one is needed.
	for range 2 {
		if e.known && now.Sub(e.confirmed) < e.bound {
			break
		}
		done := e.startLocked(e.now())
		e.mu.Unlock()
		if done == nil { // backing off: cached entries keep their TTL
			return e.gen.Load()
		}
		select {
		case <-done:
		case <-ctx.Done():
			return e.gen.Load()
		}
		e.mu.Lock()
	}
	e.mu.Unlock()
	return e.gen.Load()
}

// invalidate moves the generation: nothing cached so far is used again.
func (e *epoch) invalidate() { e.gen.Add(1) }

// startLocked starts a read unless one is in flight (whose end it
// returns) or failed reads say to wait (nil). e.mu is held.
func (e *epoch) startLocked(now time.Time) <-chan struct{} {
	if e.inflight != nil {
		return e.inflight
	}
	if now.Before(e.retryAt) {
		return nil
	}
	done := make(chan struct{})
	e.inflight = done
	go e.refresh(now, done)
	return done
}

func (e *epoch) refresh(start time.Time, done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	v, err := e.read(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.failures++
		wait := time.Second << min(e.failures-1, 10)
		e.retryAt = e.now().Add(min(wait, e.maxWait))
	} else {
		if !e.known || v != e.value {
			e.value, e.known = v, true
			e.gen.Add(1)
		}
		e.confirmed, e.failures, e.retryAt = start, 0, time.Time{}
	}
	e.inflight = nil
	close(done)
}
