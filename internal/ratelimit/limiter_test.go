package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/outcome"
	"github.com/offpath/offpath/internal/ratelimit"
	"github.com/offpath/offpath/internal/testing/poll"
)

func newLimiter(t *testing.T, limits ratelimit.Limits, burst time.Duration) (*ratelimit.Limiter, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	l, err := ratelimit.New("gpt-test", limits, ratelimit.Options{Window: time.Minute, Burst: burst, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return l, clock
}

// start runs Wait in a goroutine and returns the channel its result comes on.
func start(ctx context.Context, l *ratelimit.Limiter, tokens int64) <-chan error {
	done := make(chan error, 1)
	go func() { done <- l.Wait(ctx, tokens) }()
	return done
}

func returned(ch <-chan error) (error, bool) {
	select {
	case err := <-ch:
		return err, true
	default:
		return nil, false
	}
}

func TestLimiter_WaitsForTheWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		limits  ratelimit.Limits
		burst   time.Duration
		first   []int64 // admitted at once
		next    int64   // must wait
		advance time.Duration
	}{
		{"tokens", ratelimit.Limits{TPM: 1000}, -1, []int64{400, 400}, 400, time.Minute},
		{"requests", ratelimit.Limits{RPM: 2}, -1, []int64{1, 1}, 1, time.Minute},
		{"oversized request fills the window", ratelimit.Limits{TPM: 1000}, -1, []int64{5000}, 1, time.Minute},
		{"burst window", ratelimit.Limits{RPM: 60}, 10 * time.Second, []int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 1, 10 * time.Second},
		{"burst rounds up", ratelimit.Limits{RPM: 3}, 10 * time.Second, []int64{1}, 1, 10 * time.Second},
		{"no burst window for tokens", ratelimit.Limits{TPM: 6000}, 10 * time.Second, []int64{6000}, 1, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, clock := newLimiter(t, tt.limits, tt.burst)
			ctx := context.Background()
			for _, n := range tt.first {
				if err := l.Wait(ctx, n); err != nil {
					t.Fatalf("Wait(%d) = %v", n, err)
				}
			}
			done := start(ctx, l, tt.next)
			poll.Until(t, 5*time.Second, "the waiter's timer", func() bool { return clock.Pending() == 1 })
			clock.Advance(tt.advance - time.Millisecond)
			if _, ok := returned(done); ok {
				t.Fatalf("Wait(%d) returned before the window moved", tt.next)
			}
			clock.Advance(time.Millisecond)
			poll.Until(t, 5*time.Second, "admission", func() bool {
				err, ok := returned(done)
				if ok && err != nil {
					t.Fatalf("Wait = %v", err)
				}
				return ok
			})
			if s := l.Stats(); s.Admitted != int64(len(tt.first)+1) || s.Waited != 1 || s.WaitTime != tt.advance {
				t.Errorf("Stats = %+v", s)
			}
		})
	}
}

func TestLimiter_FirstComeFirstServed(t *testing.T) {
	t.Parallel()
	l, clock := newLimiter(t, ratelimit.Limits{TPM: 1000}, -1)
	ctx := context.Background()
	for range 4 {
		if err := l.Wait(ctx, 250); err != nil {
			t.Fatal(err)
		}
		clock.Advance(10 * time.Second)
	}
	// The window holds 4×250 charged at 0, 10, 20, 30 s (now 40 s). A big
	// request queues first, a small one second.
	big := start(ctx, l, 900)
	poll.Until(t, 5*time.Second, "big queued", func() bool { return l.Stats().Waited == 1 })
	small := start(ctx, l, 150)
	poll.Until(t, 5*time.Second, "small queued", func() bool { return l.Stats().Waited == 2 })
	if q := l.Stats().Queued; q != 2 {
		t.Errorf("Queued = %d, want 2", q)
	}
	pending := clock.Pending()
	clock.Advance(20 * time.Second) // 60 s: the first 250 leaves; 150 would fit, 900 not
	// No waiter's timer came due, so no waiter woke to be admitted: the
	// small one waits behind the big one's timer.
	if p := clock.Pending(); p != pending {
		t.Fatalf("%d of %d timers fired at 60 s: a waiter woke before the big one fits", pending-p, pending)
	}
	if _, ok := returned(small); ok {
		t.Fatal("the small request overtook the big one queued before it")
	}
	clock.Advance(30 * time.Second) // 90 s: all four left; the big one fits
	poll.Until(t, 5*time.Second, "big admitted", func() bool { _, ok := returned(big); return ok })
	if _, ok := returned(small); ok {
		t.Fatal("the small request was admitted with the big one in a 1000-token window")
	}
	clock.Advance(time.Minute)
	poll.Until(t, 5*time.Second, "small admitted", func() bool { _, ok := returned(small); return ok })
}

func TestLimiter_DeadlineFailsFast(t *testing.T) {
	t.Parallel()
	l, clock := newLimiter(t, ratelimit.Limits{TPM: 1000}, -1)
	if err := l.Wait(context.Background(), 1000); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(30*time.Second))
	defer cancel()
	err := l.Wait(ctx, 10)
	if !errors.Is(err, ratelimit.ErrDeadline) || outcome.Of(err) != outcome.Transient {
		t.Fatalf("Wait = %v, want a transient ErrDeadline", err)
	}
	if got := outcome.RetryAfter(err); got != time.Minute {
		t.Errorf("RetryAfter = %v, want 1m", got)
	}
	// The same request with time enough waits and succeeds.
	ctx2, cancel2 := context.WithDeadline(context.Background(), clock.Now().Add(2*time.Minute))
	defer cancel2()
	done := start(ctx2, l, 10)
	poll.Until(t, 5*time.Second, "timer", func() bool { return clock.Pending() == 1 })
	clock.Advance(time.Minute)
	poll.Until(t, 5*time.Second, "admission", func() bool { err, ok := returned(done); return ok && err == nil })
	if s := l.Stats(); s.GaveUp != 1 {
		t.Errorf("GaveUp = %d, want 1", s.GaveUp)
	}
}

func TestLimiter_DeadlineCountsTheQueue(t *testing.T) {
	t.Parallel()
	l, clock := newLimiter(t, ratelimit.Limits{TPM: 1000}, -1)
	ctx := context.Background()
	if err := l.Wait(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	ahead := start(ctx, l, 1000) // admitted at 60 s at the earliest
	poll.Until(t, 5*time.Second, "queued", func() bool { return l.Stats().Waited == 1 })
	// 90 s would be enough alone, but not behind the request ahead.
	dctx, cancel := context.WithDeadline(ctx, clock.Now().Add(90*time.Second))
	defer cancel()
	if err := l.Wait(dctx, 10); !errors.Is(err, ratelimit.ErrDeadline) {
		t.Errorf("Wait behind a full window = %v, want ErrDeadline", err)
	}
	clock.Advance(time.Minute)
	poll.Until(t, 5*time.Second, "ahead admitted", func() bool { _, ok := returned(ahead); return ok })
}

func TestLimiter_CancelLetsTheNextGo(t *testing.T) {
	t.Parallel()
	l, clock := newLimiter(t, ratelimit.Limits{TPM: 1000}, -1)
	ctx := context.Background()
	if err := l.Wait(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	first := start(cctx, l, 1000)
	poll.Until(t, 5*time.Second, "first queued", func() bool { return l.Stats().Waited == 1 })
	second := start(ctx, l, 10)
	poll.Until(t, 5*time.Second, "second queued", func() bool { return l.Stats().Waited == 2 })
	cancel()
	poll.Until(t, 5*time.Second, "first gives up", func() bool {
		err, ok := returned(first)
		if ok && (!errors.Is(err, context.Canceled) || outcome.Of(err) != outcome.Transient) {
			t.Fatalf("cancelled Wait = %v, want transient context.Canceled", err)
		}
		return ok
	})
	poll.Until(t, 5*time.Second, "second becomes head", func() bool { return clock.Pending() >= 1 })
	clock.Advance(time.Minute)
	poll.Until(t, 5*time.Second, "second admitted", func() bool { err, ok := returned(second); return ok && err == nil })
}

func TestLimiter_Unlimited(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, ratelimit.Limits{}, 0)
	for range 1000 {
		if err := l.Wait(context.Background(), 1<<20); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPerInstance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		quota     ratelimit.Limits
		instances int
		want      ratelimit.Limits
	}{
		{ratelimit.Limits{TPM: 30000, RPM: 180}, 5, ratelimit.Limits{TPM: 6000, RPM: 36}},
		{ratelimit.Limits{TPM: 1000, RPM: 6}, 10, ratelimit.Limits{TPM: 100, RPM: 1}},
		{ratelimit.Limits{TPM: 1000}, 0, ratelimit.Limits{TPM: 1000}},
		{ratelimit.Limits{}, 3, ratelimit.Limits{}},
	}
	for _, tt := range tests {
		if got := ratelimit.PerInstance(tt.quota, tt.instances); got != tt.want {
			t.Errorf("PerInstance(%+v, %d) = %+v, want %+v", tt.quota, tt.instances, got, tt.want)
		}
	}
}

func TestSet(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s, err := ratelimit.NewSet(map[string]ratelimit.Limits{"chat": {TPM: 100}}, ratelimit.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(time.Second))
	defer cancel()
	if err := s.Wait(ctx, "chat", 100); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx, "chat", 1); !errors.Is(err, ratelimit.ErrDeadline) {
		t.Errorf("second Wait = %v, want ErrDeadline", err)
	}
	if err := s.Wait(ctx, "embeddings", 1<<30); err != nil {
		t.Errorf("Wait on a deployment without limits = %v", err)
	}
	if s.Limiter("chat") == nil || s.Limiter("other") != nil {
		t.Error("Limiter lookup wrong")
	}
	if _, err := ratelimit.NewSet(map[string]ratelimit.Limits{"x": {TPM: -1}}, ratelimit.Options{}); err == nil {
		t.Error("NewSet accepted a negative limit")
	}
}

// TestLimiter_Concurrent hammers a limiter on real time with a short window
// under the race detector: everyone is admitted, and the counters add up.
func TestLimiter_Concurrent(t *testing.T) {
	t.Parallel()
	l, err := ratelimit.New("gpt-test", ratelimit.Limits{TPM: 2000, RPM: 200}, ratelimit.Options{Window: 50 * time.Millisecond, Burst: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 16, 10
	errs := make(chan error, workers*each)
	for w := range workers {
		go func() {
			for i := range each {
				errs <- l.Wait(context.Background(), int64(50+w*10+i))
			}
		}()
	}
	for range workers * each {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if s := l.Stats(); s.Admitted != workers*each || s.GaveUp != 0 {
		t.Errorf("Stats = %+v", s)
	}
}
