package azopenai_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/local/aoaisim"
)

const (
	chatDeployment  = "gpt-4o-mini"
	embedDeployment = "text-embedding-3-small"
)

// newQueueSim starts a simulator on loopback with the default deployments,
// changed by mod, and returns it with its URL.
func newQueueSim(t testing.TB, mod func(*aoaisim.Config)) (*aoaisim.Server, string) {
	t.Helper()
	cfg := aoaisim.Config{Deployments: aoaisim.DefaultDeployments(), DisableRateLimits: true}
	if mod != nil {
		mod(&cfg)
	}
	sim, err := aoaisim.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatalf("aoaisim.New: %v", err)
	}
	url, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim, url
}

// newClient returns a client of the simulator at url, changed by mod.
func newClient(t testing.TB, url string, limiter azopenai.Limiter, mod func(*azopenai.QueueConfig)) *azopenai.QueueClient {
	t.Helper()
	cfg := azopenai.QueueConfig{Endpoint: url, APIKey: aoaisim.DefaultKey, AllowHTTP: true, APIVersion: "2025-04-01-preview"}
	if mod != nil {
		mod(&cfg)
	}
	c, err := azopenai.NewQueueClient(cfg, limiter, zerolog.Nop())
	if err != nil {
		t.Fatalf("azopenai.New: %v", err)
	}
	return c
}

// deployment returns the simulator's counters of one deployment.
func deployment(t testing.TB, sim *aoaisim.Server, name string) aoaisim.DeploymentStats {
	t.Helper()
	for _, d := range sim.Stats().Deployments {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no deployment %q", name)
	return aoaisim.DeploymentStats{}
}

// fakeTime is a clock for the client's retries: Sleep records the wait and
// moves the clock (and, if set, the simulator's rate clock) instead of
// sleeping.
type fakeTime struct {
	mu     sync.Mutex
	now    time.Time
	waits  []time.Duration
	also   *aoaisim.Clock
	onWait func(time.Duration)
}

func newFakeTime() *fakeTime { return &fakeTime{now: time.Now()} }

func (f *fakeTime) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.waits = append(f.waits, d)
	f.mu.Unlock()
	if f.also != nil {
		f.also.Advance(d)
	}
	return ctx.Err()
}

func (f *fakeTime) Waits() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.waits...)
}

// install makes cfg use f, with no jitter above the minimum.
func (f *fakeTime) install(cfg *azopenai.QueueConfig) {
	cfg.Now, cfg.Sleep = f.Now, f.Sleep
	cfg.Jitter = func() float64 { return 0 }
}

// recordingLimiter records the charges it is asked for.
type recordingLimiter struct {
	mu      sync.Mutex
	charges map[string][]int64
}

func (r *recordingLimiter) Wait(_ context.Context, deployment string, tokens int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.charges == nil {
		r.charges = map[string][]int64{}
	}
	r.charges[deployment] = append(r.charges[deployment], tokens)
	return nil
}

func (r *recordingLimiter) total(deployment string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, c := range r.charges[deployment] {
		n += c
	}
	return n
}

func zeroLogger() zerolog.Logger { return zerolog.Nop() }
