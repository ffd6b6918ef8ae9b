package ratelimit

import "time"

// window is one span the limits apply to: the admissions in the log from
// start on are inside it, and tokens and reqs are their sums.
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
			w.tokens -= w.cost(l.log[w.start].tokens)
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
func (l *Limiter) fits(tokens int64) bool {
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
	l.log = append(l.log, entry{at: now, tokens: tokens})
	for _, w := range l.wins {
		w.tokens += w.cost(tokens)
		w.reqs++
	}
	l.stats.Admitted++
	l.stats.Tokens += tokens
}

// fitTime is when a request of tokens fits if nothing else is admitted:
// for each window, the moment enough admissions have left it.
func (l *Limiter) fitTime(now time.Time, tokens int64) time.Time {
	at := now
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
			freedTok += w.cost(l.log[i].tokens)
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
