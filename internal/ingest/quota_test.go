package ingest_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/outcome"
	"github.com/offpath/offpath/internal/ratelimit"
	"github.com/offpath/offpath/internal/testing/ratelimittest"
)

// The quota scenario: a backlog of 2 KB documents processed by 16
// concurrent invocations (host.json's maxConcurrentCalls) of one process,
// against deployments with small quotas, in virtual time (see
// ratelimittest.VirtualTime): with the rate limiter configured from the quotas, or
// naively, without a limiter, waiting out each 429 as told. Each document
// makes one embeddings call (about 520 tokens) and one chat call (about
// 790 tokens counted: prompt plus max tokens), so the chat deployment
// binds.
const (
	quotaChatTPM  = 20_000
	quotaEmbedTPM = 40_000
	quotaWorkers  = 16
)

type quotaResult struct {
	docs, abandoned int
	chat, embed     aoaisim.DeploymentStats
	// chatRate is the chat tokens charged per minute while the backlog
	// lasted (after the first minute, whose full window would flatter any
	// configuration), over the TPM.
	chatRate float64
	rate429  float64 // 429s over all model calls
	minutes  float64 // virtual time the backlog took
}

func runQuota(tb testing.TB, limited bool, docs int) quotaResult {
	tb.Helper()
	start := time.Now().Truncate(time.Second).Add(300 * time.Millisecond)
	vt := ratelimittest.NewVirtualTime(start)
	quotas := map[string]ratelimit.Limits{
		"gpt-4o-mini":            {TPM: quotaChatTPM, RPM: quotaChatTPM * 6 / 1000},
		"text-embedding-3-small": {TPM: quotaEmbedTPM, RPM: quotaEmbedTPM * 6 / 1000},
	}
	var limiter azopenai.Limiter
	queued := func() int { return 0 }
	if limited {
		set, err := ratelimit.NewSet(quotas, ratelimit.Options{Clock: vt})
		if err != nil {
			tb.Fatal(err)
		}
		limiter = set
		queued = func() int {
			return set.Limiter("gpt-4o-mini").Stats().Queued + set.Limiter("text-embedding-3-small").Stats().Queued
		}
	}
	f := newFixture(tb, fixtureOptions{
		sim: func(c *aoaisim.Config) {
			c.DisableRateLimits = false
			c.RateClock = vt.Sim()
			for i := range c.Deployments {
				q := quotas[c.Deployments[i].Name]
				c.Deployments[i].TPM, c.Deployments[i].RPM = q.TPM, q.RPM
			}
		},
		llm: func(c *azopenai.QueueConfig) {
			c.Now, c.Sleep = vt.Now, vt.Sleep
			c.RetryBudget = 2 * time.Minute
		},
		ingest:  func(o *ingest.Options) { o.Now = vt.Now },
		limiter: limiter,
	})

	var mu sync.Mutex
	var backlog [][]byte
	for i := range docs {
		backlog = append(backlog, f.drop(tb, fmt.Sprintf("acme/backlog/%04d.txt", i), prose(2000+i%50)).Body)
	}
	next := func() ([]byte, bool) {
		mu.Lock()
		defer mu.Unlock()
		if len(backlog) == 0 {
			return nil, false
		}
		b := backlog[0]
		backlog = backlog[1:]
		return b, true
	}
	var abandoned atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var running atomic.Int64
	var wg sync.WaitGroup
	for range quotaWorkers {
		running.Add(1)
		wg.Go(func() {
			defer running.Add(-1)
			for {
				body, ok := next()
				if !ok || ctx.Err() != nil {
					return
				}
				_, err := f.proc.Process(ctx, ingest.Delivery{Body: body, DeliveryCount: 1, EnqueuedTime: start, Queue: "doc-ingest"})
				if outcome.Of(err) == outcome.Transient && ctx.Err() == nil {
					abandoned.Add(1) // the host would abandon it: Service Bus redelivers
					mu.Lock()
					backlog = append(backlog, body)
					mu.Unlock()
				}
			}
		})
	}
	warmAt := start.Add(time.Minute)
	var warm, dry aoaisim.DeploymentStats
	var warmTime, dryTime, endTime time.Time
	vt.Drive(ctx, func() int { return int(running.Load()) }, queued, func(now time.Time) bool {
		if warmTime.IsZero() && !now.Before(warmAt) {
			warm, warmTime = f.simStats("gpt-4o-mini"), now
		}
		mu.Lock()
		empty := len(backlog) == 0
		mu.Unlock()
		if dryTime.IsZero() && empty {
			dry, dryTime = f.simStats("gpt-4o-mini"), now
		}
		if running.Load() == 0 {
			endTime = now
			return false
		}
		return true
	})
	wg.Wait()
	r := quotaResult{docs: docs, abandoned: int(abandoned.Load()), chat: f.simStats("gpt-4o-mini"), embed: f.simStats("text-embedding-3-small"),
		minutes: endTime.Sub(start).Minutes()}
	if m := dryTime.Sub(warmTime).Minutes(); m > 0 {
		r.chatRate = float64(dry.TokensCharged-warm.TokensCharged) / (quotaChatTPM * m)
	}
	calls := r.chat.Requests + r.chat.Throttled + r.embed.Requests + r.embed.Throttled
	if calls > 0 {
		r.rate429 = float64(r.chat.Throttled+r.embed.Throttled) / float64(calls)
	}
	for _, st := range f.statuses.all() {
		if st.State != "done" {
			tb.Errorf("%s ended %s: %s", st.Name, st.State, st.Reason)
		}
	}
	return r
}

func (r quotaResult) String() string {
	return fmt.Sprintf("%d documents in %.1f virtual minutes: chat %.1f%% of TPM sustained, %d+%d requests, %d+%d 429s (%.2f%% of calls), %d abandoned",
		r.docs, r.minutes, 100*r.chatRate, r.chat.Requests, r.embed.Requests, r.chat.Throttled, r.embed.Throttled, 100*r.rate429, r.abandoned)
}

// TestQuotaAdherence_Backlog: with the limiter, a backlog uses at least 85%
// of the chat deployment's TPM while fewer than 1% of model calls get a
// 429, and no document is abandoned; the naive configuration is measured
// alongside.
func TestQuotaAdherence_Backlog(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		t.Skip("virtual time under the race detector takes minutes of real time; go test without -race and make bench run it")
	}
	const docs = 100
	limited := runQuota(t, true, docs)
	t.Logf("limiter: %v", limited)
	if limited.chatRate < 0.85 || limited.rate429 >= 0.01 || limited.abandoned != 0 {
		t.Errorf("with the limiter: %v; want ≥ 85%% of TPM, < 1%% 429s, nothing abandoned", limited)
	}
	naive := runQuota(t, false, docs)
	t.Logf("naive:   %v", naive)
}

// BenchmarkQuotaAdherence: a backlog of 500 documents, limiter against
// naive. Run with -benchtime 1x.
func BenchmarkQuotaAdherence(b *testing.B) {
	for _, tc := range []struct {
		name    string
		limited bool
	}{{"limiter", true}, {"naive", false}} {
		b.Run(tc.name, func(b *testing.B) {
			var r quotaResult
			for b.Loop() {
				r = runQuota(b, tc.limited, 500)
			}
			b.Logf("%s: %v", tc.name, r)
			b.ReportMetric(100*r.chatRate, "%TPM")
			b.ReportMetric(100*r.rate429, "%429")
			b.ReportMetric(float64(r.chat.Throttled+r.embed.Throttled), "429s")
			b.ReportMetric(float64(r.abandoned), "abandoned")
			b.ReportMetric(r.minutes, "vmin")
		})
	}
}
