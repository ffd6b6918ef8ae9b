package aoaisim

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// windowSeconds is the length of the sliding window, in one-second buckets.
const windowSeconds = 60

type bucket struct {
	sec    int64 // unix second this bucket counts; stale when <= now-60
	reqs   int64
	tokens int64
}

// limiter enforces RPM and TPM over a sliding 60-second window of one-second
// buckets. A limit of 0 or less is unlimited.
type limiter struct {
	rpm, tpm int64

	mu      sync.Mutex
	buckets [windowSeconds]bucket
	reqs    int64 // sums over live buckets
	tokens  int64
}

func newLimiter(rpm, tpm int64) *limiter {
	return &limiter{rpm: rpm, tpm: tpm}
}

// decision is the outcome of one admission.
type decision struct {
	allowed       bool
	remainingReqs int64 // -1 when unlimited
	remainingToks int64 // -1 when unlimited
	retryAfter    time.Duration
	tokenLimited  bool // rejected by TPM rather than RPM
}

// admit charges one request of charge tokens at now if both limits allow it.
func (l *limiter) admit(now time.Time, charge int64) decision {
	sec := now.Unix()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(sec)
	reqOK := l.rpm <= 0 || l.reqs+1 <= l.rpm
	tokOK := l.tpm <= 0 || l.tokens+charge <= l.tpm
	if !reqOK || !tokOK {
		d := decision{tokenLimited: reqOK, retryAfter: l.retryAfter(now, charge)}
		d.remainingReqs, d.remainingToks = l.remaining()
		return d
	}
	b := &l.buckets[sec%windowSeconds]
	if b.sec != sec {
		*b = bucket{sec: sec}
	}
	b.reqs++
	b.tokens += charge
	l.reqs++
	l.tokens += charge
	d := decision{allowed: true}
	d.remainingReqs, d.remainingToks = l.remaining()
	return d
}

func (l *limiter) remaining() (reqs, toks int64) {
	reqs, toks = -1, -1
	if l.rpm > 0 {
		reqs = max(0, l.rpm-l.reqs)
	}
	if l.tpm > 0 {
		toks = max(0, l.tpm-l.tokens)
	}
	return reqs, toks
}

// expire drops buckets that left the window ending at sec.
func (l *limiter) expire(sec int64) {
	for i := range l.buckets {
		b := &l.buckets[i]
		if b.reqs != 0 && b.sec <= sec-windowSeconds {
			l.reqs -= b.reqs
			l.tokens -= b.tokens
			*b = bucket{}
		}
	}
}

// retryAfter is how long until enough buckets leave the window for the
// request to fit. A request larger than the TPM limit never fits; it is told
// to wait a whole window, as Azure does.
func (l *limiter) retryAfter(now time.Time, charge int64) time.Duration {
	if l.tpm > 0 && charge > l.tpm {
		return windowSeconds * time.Second
	}
	live := make([]bucket, 0, windowSeconds)
	for _, b := range l.buckets {
		if b.reqs != 0 {
			live = append(live, b)
		}
	}
	slices.SortFunc(live, func(a, b bucket) int { return cmp.Compare(a.sec, b.sec) })
	reqs, toks := l.reqs, l.tokens
	for _, b := range live {
		reqs -= b.reqs
		toks -= b.tokens
		if (l.rpm <= 0 || reqs+1 <= l.rpm) && (l.tpm <= 0 || toks+charge <= l.tpm) {
			return max(time.Unix(b.sec+windowSeconds, 0).Sub(now), time.Millisecond)
		}
	}
	return windowSeconds * time.Second
}

// setRateHeaders writes x-ratelimit-remaining-* (skipped when unlimited).
func setRateHeaders(h http.Header, d decision) {
	if d.remainingReqs >= 0 {
		h.Set("x-ratelimit-remaining-requests", strconv.FormatInt(d.remainingReqs, 10))
	}
	if d.remainingToks >= 0 {
		h.Set("x-ratelimit-remaining-tokens", strconv.FormatInt(d.remainingToks, 10))
	}
}

// errRateLimited builds Azure's 429: code "429", a message naming the
// operation and the wait, and retry-after / retry-after-ms headers.
func errRateLimited(h http.Header, operation, apiVersion string, d decision) *apiError {
	secs := int64((d.retryAfter + time.Second - 1) / time.Second)
	h.Set("retry-after", strconv.FormatInt(secs, 10))
	// Rounded up: the window frees at the exact moment, so a client waiting
	// exactly the advertised milliseconds must not arrive early.
	ms := int64((d.retryAfter + time.Millisecond - 1) / time.Millisecond)
	h.Set("retry-after-ms", strconv.FormatInt(ms, 10))
	kind := "call rate limit"
	if d.tokenLimited {
		kind = "token rate limit"
	}
	msg := fmt.Sprintf("Requests to the %s Operation under Azure OpenAI API version %s have exceeded %s of your current OpenAI S0 pricing tier. Please retry after %d seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.",
		operation, apiVersion, kind, secs)
	return newAPIError(http.StatusTooManyRequests, "429", msg)
}
