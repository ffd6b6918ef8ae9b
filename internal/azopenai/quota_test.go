package azopenai_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/ratelimit"
	"github.com/offpath/offpath/internal/testing/ratelimittest"
)

// The quota scenario: a backlog of summaries from quotaWorkers concurrent
// invocations against a chat deployment with a small TPM, in virtual time
// (see ratelimittest.VirtualTime), with the limiter's production defaults (61 s window,
// 10 s request burst window) or without a limiter.
const (
	quotaTPM     = 6000
	quotaRPM     = 36 // the simulator's default for 6,000 TPM
	quotaWorkers = 8
	quotaMax     = 64
)

type quotaResult struct {
	requests   int64   // answered by the model
	throttled  int64   // 429s
	throughput float64 // tokens charged after the first minute / (TPM × minutes since)
	rate429    float64 // throttled / (requests + throttled), the whole run
}

// runQuotaScenario runs the backlog for the given virtual minutes.
// Throughput is measured after the first minute: a sliding window lets a
// whole minute's quota through at the start, which would flatter any
// configuration over a short run.
func runQuotaScenario(tb testing.TB, limited bool, minutes int) quotaResult {
	tb.Helper()
	start := time.Now().Truncate(time.Second).Add(300 * time.Millisecond) // not on a bucket edge
	vt := ratelimittest.NewVirtualTime(start)
	sim, url := newQueueSim(tb, func(c *aoaisim.Config) {
		c.DisableRateLimits = false
		c.RateClock = vt.Sim()
		c.Deployments = []aoaisim.Deployment{{Name: chatDeployment, Model: "gpt-4o-mini", TPM: quotaTPM, RPM: quotaRPM}}
	})
	var limiter azopenai.Limiter
	queued := func() int { return 0 }
	if limited {
		set, err := ratelimit.NewSet(map[string]ratelimit.Limits{chatDeployment: {TPM: quotaTPM, RPM: quotaRPM}}, ratelimit.Options{Clock: vt})
		if err != nil {
			tb.Fatal(err)
		}
		limiter = set
		queued = func() int { return set.Limiter(chatDeployment).Stats().Queued }
	}
	c := newClient(tb, url, limiter, func(c *azopenai.QueueConfig) { c.Now, c.Sleep = vt.Now, vt.Sleep })
	text := strings.Repeat("A paragraph of the document to summarise. ", 14) // 602 bytes

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var running atomic.Int64
	var wg sync.WaitGroup
	for range quotaWorkers {
		running.Add(1)
		wg.Go(func() {
			defer running.Add(-1)
			for ctx.Err() == nil {
				_, _ = c.Summarize(ctx, chatDeployment, text, quotaMax)
			}
		})
	}
	warmAt, endAt := start.Add(time.Minute), start.Add(time.Duration(minutes)*time.Minute)
	var warm aoaisim.DeploymentStats
	var warmTime, endTime time.Time
	vt.Drive(ctx, func() int { return int(running.Load()) }, queued, func(now time.Time) bool {
		if warmTime.IsZero() && !now.Before(warmAt) {
			warm, warmTime = deployment(tb, sim, chatDeployment), now
		}
		if !now.Before(endAt) {
			endTime = now
			return false
		}
		return true
	})
	st := deployment(tb, sim, chatDeployment)
	cancel()
	wg.Wait()
	measured := endTime.Sub(warmTime).Minutes()
	r := quotaResult{
		requests:   st.Requests,
		throttled:  st.Throttled,
		throughput: float64(st.TokensCharged-warm.TokensCharged) / (quotaTPM * measured),
	}
	if n := st.Requests + st.Throttled; n > 0 {
		r.rate429 = float64(st.Throttled) / float64(n)
	}
	return r
}

// TestQuotaAdherence: under a backlog, the limiter keeps 429s under 1% of
// requests while using at least 85% of the TPM; the naive configuration
// (no limiter, retrying 429s as told) is measured alongside for the report.
func TestQuotaAdherence(t *testing.T) {
	t.Parallel()
	const minutes = 6
	limited := runQuotaScenario(t, true, minutes)
	t.Logf("limiter: %d requests, %d 429s (%.2f%%), %.1f%% of TPM", limited.requests, limited.throttled, 100*limited.rate429, 100*limited.throughput)
	if limited.rate429 >= 0.01 {
		t.Errorf("with the limiter %.2f%% of requests got 429, want under 1%%", 100*limited.rate429)
	}
	if limited.throughput < 0.85 {
		t.Errorf("with the limiter throughput is %.1f%% of TPM, want at least 85%%", 100*limited.throughput)
	}
	naive := runQuotaScenario(t, false, minutes)
	t.Logf("naive:   %d requests, %d 429s (%.2f%%), %.1f%% of TPM", naive.requests, naive.throttled, 100*naive.rate429, 100*naive.throughput)
}

// BenchmarkQuotaAdherence reports the same scenario over 30 virtual
// minutes: run it with -benchtime 1x.
func BenchmarkQuotaAdherence(b *testing.B) {
	for _, tc := range []struct {
		name    string
		limited bool
	}{{"limiter", true}, {"naive", false}} {
		b.Run(tc.name, func(b *testing.B) {
			var r quotaResult
			for b.Loop() {
				r = runQuotaScenario(b, tc.limited, 30)
			}
			b.ReportMetric(100*r.throughput, "%TPM")
			b.ReportMetric(100*r.rate429, "%429")
			b.ReportMetric(float64(r.throttled), "429s")
			b.ReportMetric(float64(r.requests), "admitted")
		})
	}
}
