package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/ratelimit"
	"github.com/offpath/offpath/internal/testing/poll"
)

// admit charges tokens, failing the test if it waits (the manual clock
// does not move while it does).
func admit(t *testing.T, l *ratelimit.Limiter, tokens int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Wait(ctx, tokens); err != nil {
		t.Fatalf("Wait(%d) did not admit at once: %v", tokens, err)
	}
}

func TestLimiter_Released(t *testing.T) {
	t.Parallel()
	l, clock := newLimiter(t, ratelimit.Limits{TPM: 1000, RPM: 10}, -1)
	t0 := clock.Now()
	admit(t, l, 300)
	clock.Advance(10 * time.Second)
	admit(t, l, 200)
	clock.Advance(10 * time.Second) // t0+20s: the window holds 500 tokens, 2 requests

	got := l.Released(ratelimit.Limits{TPM: 1000, RPM: 10}, ratelimit.Limits{TPM: 100, RPM: 1})
	want := []ratelimit.Step{
		{At: t0.Add(20 * time.Second), TPM: 500, RPM: 8}, // what the window does not hold: free at once
		{At: t0.Add(60 * time.Second), TPM: 300, RPM: 1}, // the 300 leave: 200 held
		{At: t0.Add(70 * time.Second), TPM: 100},         // the 200 leave: only the 100 kept
	}
	if len(got) != len(want) {
		t.Fatalf("Released = %+v, want %+v", got, want)
	}
	var tpm, rpm int64
	for i := range want {
		if !got[i].At.Equal(want[i].At) || got[i].TPM != want[i].TPM || got[i].RPM != want[i].RPM {
			t.Errorf("Released[%d] = %+v, want %+v", i, got[i], want[i])
		}
		tpm, rpm = tpm+got[i].TPM, rpm+got[i].RPM
	}
	if tpm != 900 || rpm != 9 {
		t.Errorf("Released gives up %d tokens and %d requests, want 900 and 9", tpm, rpm)
	}
	if l.Limits() != (ratelimit.Limits{TPM: 1000, RPM: 10}) {
		t.Errorf("Released changed the limits to %+v", l.Limits())
	}
}

func TestLimiter_ResizeDownWaitsForTheWindow(t *testing.T) {
	t.Parallel()
	l, clock := newLimiter(t, ratelimit.Limits{TPM: 1000}, -1)
	admit(t, l, 600)
	l.Resize(ratelimit.Limits{TPM: 500})
	done := start(context.Background(), l, 100)
	poll.Until(t, 5*time.Second, "the waiter's timer", func() bool { return clock.Pending() == 1 })
	if _, ok := returned(done); ok {
		t.Fatal("admitted above the lowered limit")
	}
	clock.Advance(time.Minute) // the 600 leave
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l.Resize(ratelimit.Limits{TPM: 2000})
	admit(t, l, 1500) // raised: at once
}

func TestLimiter_Suspend(t *testing.T) {
	t.Parallel()
	l, clock := newLimiter(t, ratelimit.Limits{TPM: 1000}, -1)
	l.Suspend(clock.Now().Add(5 * time.Second))
	done := start(context.Background(), l, 10)
	poll.Until(t, 5*time.Second, "the waiter's timer", func() bool { return clock.Pending() == 1 })
	clock.Advance(5 * time.Second) // past the expected end, still suspended
	poll.Until(t, 5*time.Second, "the waiter's next look", func() bool { return clock.Pending() == 1 })
	if _, ok := returned(done); ok {
		t.Fatal("admitted while suspended")
	}
	l.Suspend(time.Time{})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestLimiter_Observe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sig  ratelimit.Signal
		hold time.Duration // 0: no pause
	}{
		{"plenty of room", ratelimit.Signal{RemainingTokens: 5000, RemainingRequests: 50}, 0},
		{"headers absent", ratelimit.Unknown(), 0},
		{"fewer tokens left than the next request", ratelimit.Signal{RemainingTokens: 50, RemainingRequests: 9}, ratelimit.DefaultHeaderHold},
		{"no request left", ratelimit.Signal{RemainingTokens: -1, RemainingRequests: 0}, ratelimit.DefaultHeaderHold},
		{"429 with its wait", ratelimit.Signal{RemainingTokens: -1, RemainingRequests: -1, Throttled: true, RetryAfter: 7 * time.Second}, 7 * time.Second},
		{"429 without a wait", ratelimit.Signal{RemainingTokens: -1, RemainingRequests: -1, Throttled: true}, ratelimit.DefaultHeaderHold},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, clock := newLimiter(t, ratelimit.Limits{TPM: 100_000}, -1)
			admit(t, l, 100)
			l.Observe(tt.sig)
			done := start(context.Background(), l, 100)
			if tt.hold == 0 {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				return
			}
			poll.Until(t, 5*time.Second, "the waiter's timer", func() bool { return clock.Pending() == 1 })
			clock.Advance(tt.hold - time.Millisecond)
			if _, ok := returned(done); ok {
				t.Fatal("admitted before the pause ended")
			}
			clock.Advance(time.Millisecond)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if s := l.Stats(); s.Throttled+s.Held != 1 {
				t.Errorf("stats %+v, want one throttle or hold", s)
			}
		})
	}
}
