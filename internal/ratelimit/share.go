package ratelimit

import (
	"slices"
	"time"
)

// DefaultHeaderHold is how long a Limiter stops admitting after the
// service said it has no room left (see Observe): Azure counts its window
// in one-second buckets, so a second later the oldest one has left.
const DefaultHeaderHold = time.Second

// Signal is what one answer of the service said about the deployment's
// room, read from its headers by the client.
type Signal struct {
	// RemainingTokens and RemainingRequests are x-ratelimit-remaining-tokens
	// and x-ratelimit-remaining-requests; negative when absent or unusable
	// (Azure has answered -1).
	RemainingTokens   int64
	RemainingRequests int64
	// Throttled is a 429; RetryAfter its wait (0 when it named none).
	Throttled  bool
	RetryAfter time.Duration
}

// Unknown is a Signal that says nothing.
func Unknown() Signal { return Signal{RemainingTokens: -1, RemainingRequests: -1} }

// Usage is what a Limiter holds: the charges inside its window and those
// waiting in its queue.
type Usage struct {
	Tokens, Requests             int64
	QueuedTokens, QueuedRequests int64
	// Charge is the next request's charge (the head waiter's, else the
	// last admitted, else 1): the grain a limit is used in.
	Charge int64
}

// Step is a part of a limit given up that others may use from At on.
type Step struct {
	At       time.Time
	TPM, RPM int64
}

// Limits returns the limits in force.
func (l *Limiter) Limits() Limits {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limits
}

// Resize changes the limits in force. What was admitted stays counted: a
// lower limit makes requests wait until the window has drained below it,
// a higher one admits them at once.
func (l *Limiter) Resize(lim Limits) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limits = lim
	l.wins[0].tokCap, l.wins[0].reqCap = lim.TPM, lim.RPM
	if len(l.wins) > 1 {
		l.wins[1].reqCap = burstShare(lim.RPM, l.wins[1].dur, l.wins[0].dur)
	}
	l.wakeHead()
}

// Suspend stops admissions until Suspend(time.Time{}) resumes them: the
// process holds no share of the quota. until is when that is expected to
// change (the next attempt to get one), what waiters are told to expect.
func (l *Limiter) Suspend(until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.suspended = until
	l.wakeHead()
}

// Observe takes what the service said. A 429 stops admissions for its
// wait, so the process's other requests do not run into the same wall. An
// admitted answer that leaves fewer remaining tokens than the next request
// needs, or no remaining requests, stops them for DefaultHeaderHold: the
// service counts less room than the limiter does (another client uses the
// deployment, or clocks disagree), and sending now would be answered 429.
func (l *Limiter) Observe(s Signal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	var until time.Time
	switch {
	case s.Throttled:
		l.stats.Throttled++
		until = now.Add(max(s.RetryAfter, DefaultHeaderHold))
	case s.RemainingRequests == 0, s.RemainingTokens >= 0 && s.RemainingTokens < l.nextCharge():
		l.stats.Held++
		until = now.Add(DefaultHeaderHold)
	default:
		return
	}
	if until.After(l.hold) {
		l.hold = until
	}
}

// nextCharge is the charge of the head waiter, or of the last admission.
func (l *Limiter) nextCharge() int64 {
	if len(l.queue) > 0 {
		return l.queue[0].tokens
	}
	if n := len(l.log); n > 0 {
		return l.log[n-1].tokens
	}
	return 1
}

// Usage returns what the window and the queue hold now.
func (l *Limiter) Usage() Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(l.clock.Now())
	u := Usage{Tokens: l.wins[0].tokens, Requests: l.wins[0].reqs, QueuedRequests: int64(len(l.queue)), Charge: max(l.nextCharge(), 1)}
	for _, w := range l.queue {
		u.QueuedTokens += w.tokens
	}
	return u
}

// Released says when the part of limits from that a change to to gives
// up becomes free for others: at once for what the window does not hold,
// and for the rest as the admissions counted against it leave the window
// (the limiter never holds more than max(to, what is left of them), see
// Resize). It changes nothing.
func (l *Limiter) Released(from, to Limits) []Step {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	l.expire(now)
	w := l.wins[0]
	gone := func(limit, keep, held int64) int64 { // given up and not held
		return max(0, limit-max(keep, min(limit, held)))
	}
	tok, req := w.tokens, w.reqs
	steps := []Step{{At: now, TPM: gone(from.TPM, to.TPM, tok), RPM: gone(from.RPM, to.RPM, req)}}
	for i := w.start; i < len(l.log); i++ {
		e := l.log[i]
		tok, req = tok-e.cost, req-1
		at := e.at.Add(w.dur)
		t, r := gone(from.TPM, to.TPM, tok), gone(from.RPM, to.RPM, req)
		last := &steps[len(steps)-1]
		if !at.After(last.At) {
			last.TPM, last.RPM = t, r
			continue
		}
		if t != last.TPM || r != last.RPM {
			steps = append(steps, Step{At: at, TPM: t, RPM: r})
		}
	}
	// Cumulative → increments.
	var tPrev, rPrev int64
	out := steps[:0]
	for _, s := range steps {
		s.TPM, s.RPM, tPrev, rPrev = s.TPM-tPrev, s.RPM-rPrev, s.TPM, s.RPM
		if s.TPM > 0 || s.RPM > 0 {
			out = append(out, s)
		}
	}
	return slices.Clip(out)
}

// wakeHead tells the head waiter to look again.
func (l *Limiter) wakeHead() {
	if len(l.queue) > 0 {
		select {
		case l.queue[0].wake <- struct{}{}:
		default:
		}
	}
}
