package azopenai_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/outcome"
	"github.com/offpath/offpath/internal/ratelimit"
)

// TestClient_FailingSimulator: with every request failing, a call ends
// transient once its budget or its attempts are spent, with a bounded number
// of attempts, waits that fit the budget, and a wait hint for the host.
func TestClient_FailingSimulator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		fault        aoaisim.FaultRule
		budget       time.Duration
		maxAttempts  int
		wantAttempts int // exact, from the backoff arithmetic
	}{
		// Backoff without jitter: 250ms, 500ms, 1s, 2s, 4s, 4s, ... (half of
		// 500ms × 2^n capped at 8s); each wait must leave MinAttemptTime (2s).
		{"500s, attempts run out", aoaisim.FaultRule{ErrorRate: 1, ErrorStatus: 500}, time.Minute, 6, 6},
		// 6s budget: waits of 250ms, 500ms, 1s, 2s leave 2.25s; the next 4s
		// wait would not leave 2s for an attempt.
		{"503s, budget runs out", aoaisim.FaultRule{ErrorRate: 1, ErrorStatus: 503}, 6 * time.Second, 10, 5},
		{"connection resets", aoaisim.FaultRule{ResetRate: 1}, 6 * time.Second, 10, 5},
		{"tiny budget: one attempt", aoaisim.FaultRule{ErrorRate: 1}, time.Second, 10, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim, url := newQueueSim(t, func(c *aoaisim.Config) { c.Faults = []aoaisim.FaultRule{tt.fault} })
			ft := newFakeTime()
			c := newClient(t, url, nil, func(c *azopenai.QueueConfig) {
				ft.install(c)
				c.MaxAttempts = tt.maxAttempts
			})
			ctx, cancel := context.WithDeadline(context.Background(), ft.Now().Add(tt.budget))
			defer cancel()
			got, err := c.Summarize(ctx, chatDeployment, "text", 50)
			if outcome.Of(err) != outcome.Transient {
				t.Fatalf("Summarize = %v (%v), want transient", err, outcome.Of(err))
			}
			if outcome.RetryAfter(err) <= 0 {
				t.Errorf("RetryAfter = %v, want a hint", outcome.RetryAfter(err))
			}
			attempts := int(sim.Stats().Routes[aoaisim.RouteChat])
			if attempts != tt.wantAttempts || got.Trace.Attempts != attempts {
				t.Errorf("%d attempts (trace %d), want %d", attempts, got.Trace.Attempts, tt.wantAttempts)
			}
			var waited time.Duration
			for _, w := range ft.Waits() {
				waited += w
			}
			if waited+2*time.Second > tt.budget && attempts > 1 {
				t.Errorf("waited %v of a %v budget: no room left for the last attempt", waited, tt.budget)
			}
			if len(ft.Waits()) != attempts-1 || got.Trace.Waited != waited {
				t.Errorf("%d waits (%v), trace says %v, for %d attempts", len(ft.Waits()), waited, got.Trace.Waited, attempts)
			}
			if got.Usage != (ledger.Usage{}) {
				t.Errorf("usage %+v from failed attempts", got.Usage)
			}
		})
	}
}

// TestClient_HangingRequest: an attempt that never answers is cut by the
// attempt timeout and retried.
func TestClient_HangingRequest(t *testing.T) {
	t.Parallel()
	sim, url := newQueueSim(t, func(c *aoaisim.Config) {
		c.Faults = []aoaisim.FaultRule{{Deployment: embedDeployment, HangRate: 1}}
	})
	ft := newFakeTime()
	c := newClient(t, url, nil, func(c *azopenai.QueueConfig) {
		ft.install(c)
		c.AttemptTimeout = 50 * time.Millisecond
		c.MaxAttempts = 3
	})
	got, err := c.Embed(context.Background(), embedDeployment, []string{"x"})
	if outcome.Of(err) != outcome.Transient || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Embed = %v, want transient with the attempt's deadline", err)
	}
	if got.Trace.Attempts != 3 || got.Trace.Requests != 0 {
		t.Errorf("trace %+v, want 3 attempts and no answer", got.Trace)
	}
	// An attempt cut off before the simulator read it never hung there (on
	// a busy machine, 50 ms may pass before it does): the simulator saw at
	// most the client's three, and at least one.
	if n := sim.Stats().FaultHangs; n < 1 || n > 3 {
		t.Errorf("%d hung attempts at the simulator, want 1 to 3", n)
	}
}

// TestClient_CallerCancels: the caller's deadline ends the call at once.
func TestClient_CallerCancels(t *testing.T) {
	t.Parallel()
	_, url := newQueueSim(t, func(c *aoaisim.Config) { c.Faults = []aoaisim.FaultRule{{HangRate: 1}} })
	c := newClient(t, url, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Summarize(ctx, chatDeployment, "x", 10)
	if outcome.Of(err) != outcome.Transient || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Summarize = %v, want transient deadline exceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v after the deadline", d)
	}
}

// TestClient_429HonoursRetryAfter runs against a simulator whose rate-limit
// clock stands still: the client's injected sleep moves it. A second
// request in the same minute is throttled; the client must wait at least
// what the 429 asked (the time until the first request leaves the window)
// and then succeed.
func TestClient_429HonoursRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		limits aoaisim.Deployment
		first  string
		second string
	}{
		{"tokens per minute", aoaisim.Deployment{TPM: 1000, RPM: -1}, strings.Repeat("x", 4000), "y"},
		{"requests per minute", aoaisim.Deployment{RPM: 1}, "x", "y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			rateClock := aoaisim.NewClock(start, 0) // frozen
			sim, url := newQueueSim(t, func(c *aoaisim.Config) {
				c.DisableRateLimits = false
				c.RateClock = rateClock
				c.Deployments = []aoaisim.Deployment{{Name: embedDeployment, Model: embedDeployment, TPM: tt.limits.TPM, RPM: tt.limits.RPM}}
			})
			ft := newFakeTime()
			ft.also = rateClock
			c := newClient(t, url, nil, ft.install)
			ctx := context.Background()
			if _, err := c.Embed(ctx, embedDeployment, []string{tt.first}); err != nil {
				t.Fatalf("first Embed: %v", err)
			}
			got, err := c.Embed(ctx, embedDeployment, []string{tt.second})
			if err != nil {
				t.Fatalf("second Embed: %v", err)
			}
			// The first request sits in the bucket of its second until that
			// bucket leaves the 60 s window.
			asked := time.Unix(start.Unix()+60, 0).Sub(start)
			waits := ft.Waits()
			if len(waits) != 1 || waits[0] < asked || waits[0] > asked+asked/10+2*time.Millisecond {
				t.Errorf("waits %v, want one of at least %v (what the 429 asked) and at most 10%% more", waits, asked)
			}
			if got.Trace.Attempts != 2 || got.Trace.Throttled != 1 || deployment(t, sim, embedDeployment).Throttled != 1 {
				t.Errorf("trace %+v, simulator throttled %d: want one 429 then success", got.Trace, deployment(t, sim, embedDeployment).Throttled)
			}
		})
	}
}

// TestClient_429sDoNotSpendAttempts: a 429 names its wait, so waiting it
// out does not use up MaxAttempts, which bounds real failures; only the
// time budget bounds throttling.
func TestClient_429sDoNotSpendAttempts(t *testing.T) {
	t.Parallel()
	rateClock := aoaisim.NewClock(time.Now(), 0)
	sim, url := newQueueSim(t, func(c *aoaisim.Config) {
		c.DisableRateLimits = false
		c.RateClock = rateClock
		c.Deployments = []aoaisim.Deployment{{Name: embedDeployment, Model: embedDeployment, RPM: 1}}
	})
	ft := newFakeTime()
	ft.also = rateClock
	c := newClient(t, url, nil, func(c *azopenai.QueueConfig) {
		ft.install(c)
		c.MaxAttempts = 1
	})
	ctx := context.Background()
	for i, text := range []string{"x", "y", "z"} {
		if _, err := c.Embed(ctx, embedDeployment, []string{text}); err != nil {
			t.Fatalf("Embed %d: %v, want the 429 waited out", i, err)
		}
	}
	if n := deployment(t, sim, embedDeployment).Throttled; n != 2 {
		t.Errorf("%d 429s, want 2 (one for each call after the first)", n)
	}
}

// TestClient_429BeyondBudget: when the service asks for a longer wait than
// the budget holds, the call returns at once, transient, with that wait.
func TestClient_429BeyondBudget(t *testing.T) {
	t.Parallel()
	rateClock := aoaisim.NewClock(time.Now(), 0)
	sim, url := newQueueSim(t, func(c *aoaisim.Config) {
		c.DisableRateLimits = false
		c.RateClock = rateClock
		c.Deployments = []aoaisim.Deployment{{Name: embedDeployment, Model: embedDeployment, RPM: 1}}
	})
	ft := newFakeTime()
	c := newClient(t, url, nil, ft.install)
	ctx, cancel := context.WithDeadline(context.Background(), ft.Now().Add(20*time.Second))
	defer cancel()
	if _, err := c.Embed(ctx, embedDeployment, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Embed(ctx, embedDeployment, []string{"y"})
	if outcome.Of(err) != outcome.Transient || outcome.RetryAfter(err) < 40*time.Second {
		t.Errorf("Embed = %v, RetryAfter %v; want transient with the 429's wait", err, outcome.RetryAfter(err))
	}
	if len(ft.Waits()) != 0 || deployment(t, sim, embedDeployment).Throttled != 1 {
		t.Errorf("waits %v, throttled %d: want no wait and one 429", ft.Waits(), deployment(t, sim, embedDeployment).Throttled)
	}
}

// TestClient_LimiterError: a limiter that cannot make room in time fails
// the call before any request.
func TestClient_LimiterError(t *testing.T) {
	t.Parallel()
	sim, url := newQueueSim(t, nil)
	boom := outcome.Retry(errors.New("no room before the deadline"), time.Minute)
	c := newClient(t, url, limiterFunc(func(context.Context, string, int64) error { return boom }), nil)
	_, err := c.Embed(context.Background(), embedDeployment, []string{"x"})
	if !errors.Is(err, boom) || outcome.RetryAfter(err) != time.Minute {
		t.Errorf("Embed = %v, want the limiter's error", err)
	}
	if n := sim.Stats().Routes[aoaisim.RouteEmbeddings]; n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

type limiterFunc func(ctx context.Context, deployment string, tokens int64) error

func (f limiterFunc) Wait(ctx context.Context, deployment string, tokens int64) error {
	return f(ctx, deployment, tokens)
}

// observingLimiter records what the client tells it about each answer.
type observingLimiter struct {
	recordingLimiter
	mu      sync.Mutex
	signals []ratelimit.Signal
}

func (o *observingLimiter) Observe(deployment string, s ratelimit.Signal) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.signals = append(o.signals, s)
}

// TestClient_TellsTheLimiterWhatTheServiceSaid: every answer's
// x-ratelimit-remaining-* and every 429 with its wait reach the limiter.
func TestClient_TellsTheLimiterWhatTheServiceSaid(t *testing.T) {
	t.Parallel()
	start := time.Now()
	rateClock := aoaisim.NewClock(start, 0) // frozen
	_, url := newQueueSim(t, func(c *aoaisim.Config) {
		c.DisableRateLimits = false
		c.RateClock = rateClock
		c.Deployments = []aoaisim.Deployment{{Name: embedDeployment, Model: embedDeployment, TPM: 1000, RPM: 10}}
	})
	ft := newFakeTime()
	ft.also = rateClock
	lim := &observingLimiter{}
	c := newClient(t, url, lim, ft.install)
	ctx := context.Background()
	if _, err := c.Embed(ctx, embedDeployment, []string{strings.Repeat("x", 3000)}); err != nil { // 750 tokens
		t.Fatal(err)
	}
	if _, err := c.Embed(ctx, embedDeployment, []string{strings.Repeat("y", 2000)}); err != nil { // 500: a 429 first
		t.Fatal(err)
	}
	want := []ratelimit.Signal{
		{RemainingTokens: 250, RemainingRequests: 9},
		{RemainingTokens: 250, RemainingRequests: 9, Throttled: true, RetryAfter: time.Unix(start.Unix()+60, 0).Sub(start).Round(time.Millisecond)},
		{RemainingTokens: 500, RemainingRequests: 9},
	}
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if len(lim.signals) != len(want) {
		t.Fatalf("signals %+v, want %+v", lim.signals, want)
	}
	for i, w := range want {
		got := lim.signals[i]
		if got.RetryAfter > 0 && w.RetryAfter > 0 && (got.RetryAfter-w.RetryAfter).Abs() <= time.Millisecond {
			got.RetryAfter = w.RetryAfter
		}
		if got != w {
			t.Errorf("signal %d = %+v, want %+v", i, got, w)
		}
	}
}
