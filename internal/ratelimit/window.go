package ratelimit

import "time"

// window is one span the limits apply to: the admissions in the log from
// start on are inside it, and tokens and reqs are their sums. Only the
// first (longest) window counts tokens; a charge is counted there at its
// cost, never more than the token limit in force when it was admitted.
type window struct {
	dur            time.Duration
	tokCap, reqCap int64 // 0: unlimited
	start          int
	tokens, reqs   int64
}

// cost is what a charge counts in w: never more than the whole limit.
func (w *window) cost(tokens int64) int64 {
	if w.tokCap > 0 {
		return min(tokens, w.tokCap)
	}
	return tokens
}

// expire moves every window past the admissions that have left it, and
// drops the log's head once no window needs it.
func (l *Limiter) expire(now time.Time) {
	lowest := len(l.log)
	for _, w := range l.wins {
		for w.start < len(l.log) && !l.log[w.start].at.Add(w.dur).After(now) {
			w.tokens -= l.log[w.start].cost
			w.reqs--
			w.start++
		}
		lowest = min(lowest, w.start)
	}
	if lowest > 0 && lowest >= len(l.log)/2 {
		n := copy(l.log, l.log[lowest:])
		clear(l.log[n:])
		l.log = l.log[:n]
		for _, w := range l.wins {
			w.start -= lowest
		}
	}
}

// fits reports whether a request of tokens is within every window now.
func (l *Limiter) fits(now time.Time, tokens int64) bool {
	if !l.suspended.IsZero() || now.Before(l.hold) {
		return false
	}
	for _, w := range l.wins {
		if w.reqCap > 0 && w.reqs+1 > w.reqCap {
			return false
		}
		if w.tokCap > 0 && w.tokens+w.cost(tokens) > w.tokCap {
			return false
		}
	}
	return true
}

func (l *Limiter) charge(now time.Time, tokens int64) {
	e := entry{at: now, tokens: tokens, cost: l.wins[0].cost(tokens)}
	l.log = append(l.log, e)
	for _, w := range l.wins {
		w.tokens += e.cost
		w.reqs++
	}
	l.stats.Admitted++
	l.stats.Tokens += tokens
}

// fitTime is when a request of tokens fits if nothing else is admitted:
// for each window, the moment enough admissions have left it.
func (l *Limiter) fitTime(now time.Time, tokens int64) time.Time {
	at := now
	if h := l.heldUntil(now); h.After(at) {
		at = h
	}
	for _, w := range l.wins {
		var needTok, needReq int64
		if w.tokCap > 0 {
			needTok = w.tokens + w.cost(tokens) - w.tokCap
		}
		if w.reqCap > 0 {
			needReq = w.reqs + 1 - w.reqCap
		}
		if needTok <= 0 && needReq <= 0 {
			continue
		}
		var freedTok, freedReq int64
		for i := w.start; i < len(l.log); i++ {
			freedTok += l.log[i].cost
			freedReq++
			if freedTok >= needTok && freedReq >= needReq {
				if t := l.log[i].at.Add(w.dur); t.After(at) {
					at = t
				}
				break
			}
		}
	}
	return at
}

// heldUntil is when admissions may resume after an Observe or a Suspend
// (a suspension past its expected end is looked at again every
// DefaultHeaderHold until it is lifted).
func (l *Limiter) heldUntil(now time.Time) time.Time {
	if l.suspended.IsZero() {
		return l.hold
	}
	s := l.suspended
	if !s.After(now) {
		s = now.Add(DefaultHeaderHold)
	}
	return later(l.hold, s)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
