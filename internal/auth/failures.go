package auth

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// failures limits failed authentications per source (a token bucket each:
// a burst of perMinute, refilled at perMinute a minute). A source that has
// used its budget gets answers from the cache only: nothing it presents is
// looked up in storage or verified until the bucket refills, so guessing
// ids costs storage nothing and a genuine credential already cached keeps
// working for a neighbour behind the same address.
type failures struct {
	per   time.Duration // one failure's refill
	burst float64
	max   int

	mu      sync.Mutex
	buckets map[string]bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newFailures(perMinute, max int) *failures {
	return &failures{per: time.Minute / time.Duration(perMinute), burst: float64(perMinute), max: max, buckets: map[string]bucket{}}
}

// level is the bucket's budget at now (full for a source never seen).
func (f *failures) level(b bucket, ok bool, now time.Time) float64 {
	if !ok {
		return f.burst
	}
	return min(f.burst, b.tokens+float64(now.Sub(b.at))/float64(f.per))
}

// blocked reports whether src has no failure left to spend.
func (f *failures) blocked(src string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.buckets[src]
	return f.level(b, ok, now) < 1
}

// fail spends one of src's failures.
func (f *failures) fail(src string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.buckets[src]
	if !ok && len(f.buckets) >= f.max {
		for k, old := range f.buckets { // forget the sources whose budget is whole again
			if f.level(old, true, now) >= f.burst {
				delete(f.buckets, k)
			}
		}
		if len(f.buckets) >= f.max {
			clear(f.buckets)
		}
	}
	f.buckets[src] = bucket{tokens: max(0, f.level(b, ok, now)-1), at: now}
}

// source names where r comes from, for the failure limit: the address the
// platform's front end appended last to X-Forwarded-For (a client can
// forge what comes before it, not that), else the connection's peer. IPv6
// addresses count by their /64, which one client usually holds whole.
func source(r *http.Request) string {
	s := r.RemoteAddr
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		last := xff[len(xff)-1]
		s = strings.TrimSpace(last[strings.LastIndexByte(last, ',')+1:])
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		if len(s) > 64 {
			s = s[:64]
		}
		return s
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
