package ratelimit

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestFitTime_Property drives the window arithmetic with random requests,
// each admitted at the time fitTime names, and checks against a brute-force
// count of the log that every window stays within its limits and that one
// nanosecond earlier would not have fitted.
func TestFitTime_Property(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		limits := Limits{TPM: int64(500 + rng.IntN(5000)), RPM: int64(rng.IntN(40))}
		l, err := New("p", limits, Options{Window: time.Minute, Burst: time.Duration(rng.IntN(3)) * 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var all []entry // never trimmed
		now := time.Unix(1_700_000_000, 0)
		for range 400 {
			now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
			tokens := int64(rng.IntN(int(limits.TPM) / 2))
			if rng.IntN(20) == 0 {
				tokens = limits.TPM * 2 // oversized
			}
			l.expire(now)
			at := l.fitTime(now, tokens)
			if at.After(now) {
				l.expire(at.Add(-time.Nanosecond))
				if l.fits(at.Add(-time.Nanosecond), tokens) {
					t.Fatalf("seed %d: fits at %v, before fitTime %v", seed, at.Add(-time.Nanosecond), at)
				}
			}
			now = at
			l.expire(now)
			if !l.fits(at, tokens) {
				t.Fatalf("seed %d: does not fit at fitTime", seed)
			}
			l.charge(now, tokens)
			all = append(all, entry{at: now, tokens: tokens, cost: l.wins[0].cost(tokens)})
			for _, w := range l.wins {
				var sumTok, sumReq int64
				for _, e := range all {
					if e.at.Add(w.dur).After(now) {
						sumTok += e.cost
						sumReq++
					}
				}
				if sumTok != w.tokens || sumReq != w.reqs {
					t.Fatalf("seed %d: window %v counts %d/%d, brute force %d/%d", seed, w.dur, w.tokens, w.reqs, sumTok, sumReq)
				}
				if w.tokCap > 0 && sumTok > w.tokCap || w.reqCap > 0 && sumReq > w.reqCap {
					t.Fatalf("seed %d: window %v holds %d tokens / %d requests, limits %d/%d", seed, w.dur, sumTok, sumReq, w.tokCap, w.reqCap)
				}
			}
		}
	}
}
