package tokenmetrics

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/outcome"
)

// Prometheus serves this process's metrics in Prometheus' text format, for
// clusters that scrape their workers:
//
//	offpath_tokens_total{tenant,alias,deployment,path,kind}  the ledger's changes
//	offpath_tokens_corrected_total{...}                      tokens taken off rows rewritten lower
//	offpath_documents_total{tenant,outcome}                  queue-path deliveries settled: done, refused, rejected, transient
//	offpath_batch_jobs{state}                                batch jobs by state, read from the job table
//	offpath_batch_fallbacks_total{alias,reason}              batch parts that gave up on their batch for their job's complete_by
//
// Counters are this process's: they start at zero when it starts, as
// Prometheus counters do, and a negative token change is counted in
// offpath_tokens_corrected_total rather than lowering the counter. The
// jobs gauge is the job table's, the same on every instance: a scrape
// reads it (at most once per JobsTTL, concurrent scrapes sharing one
// read); a read that fails shows the family without series rather than an
// old count.
type Prometheus struct {
	o         PrometheusOptions
	mu        sync.Mutex
	tokens    map[[5]string]int64
	corrected map[[5]string]int64
	documents map[[2]string]int64
	placed    map[[3]string]int64
	cooloffs  map[[2]string]int64
	fallbacks map[[2]string]int64

	jobsMu   sync.Mutex
	jobs     map[string]int // nil: none read, or the last read failed
	jobsRead time.Time
	flight   singleflight.Group
}

// Prometheus counts the batch scheduler's decisions and fallbacks.
var (
	_ batch.Decisions       = (*Prometheus)(nil)
	_ batch.FallbackCounter = (*Prometheus)(nil)
)

var tokenLabels = []string{"tenant", "alias", "deployment", "path", "kind"}

// JobStates counts batch jobs by state (package tablestore's Jobs).
type JobStates interface {
	CountByState(ctx context.Context) (map[string]int, error)
}

// Defaults of PrometheusOptions.
const (
	DefaultJobsTTL     = 30 * time.Second
	DefaultJobsTimeout = 10 * time.Second
)

// PrometheusOptions are the Prometheus endpoint's dependencies.
type PrometheusOptions struct {
	// Jobs is the job table; nil: the jobs family has no series.
	Jobs JobStates
	// JobsTTL is how long one read of the job table serves scrapes
	// (default DefaultJobsTTL); JobsTimeout bounds a read (default
	// DefaultJobsTimeout).
	JobsTTL, JobsTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log gets the failed reads of the job table.
	Log zerolog.Logger
}

// NewPrometheus returns an empty set of metrics.
func NewPrometheus(o PrometheusOptions) *Prometheus {
	if o.JobsTTL <= 0 {
		o.JobsTTL = DefaultJobsTTL
	}
	if o.JobsTimeout <= 0 {
		o.JobsTimeout = DefaultJobsTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Prometheus{o: o, tokens: map[[5]string]int64{}, corrected: map[[5]string]int64{},
		documents: map[[2]string]int64{}, placed: map[[3]string]int64{}, cooloffs: map[[2]string]int64{},
		fallbacks: map[[2]string]int64{}}
}

// Emit counts the samples.
func (p *Prometheus) Emit(_ context.Context, samples []ledger.Sample) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range samples {
		for kind, v := range map[string]int64{"prompt": s.PromptTokens, "completion": s.CompletionTokens} {
			k := [5]string{s.Tenant, s.Alias, s.Deployment, string(s.Path), kind}
			if v >= 0 {
				p.tokens[k] += v
			} else {
				p.corrected[k] -= v
			}
		}
	}
}

// Settled counts one queue-path delivery that ended with k.
func (p *Prometheus) Settled(tenant string, k outcome.Kind) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.documents[[2]string{tenant, k.String()}]++
}

// Placed counts one batch part the scheduler submitted to deployment, for
// reason (package batch's Decisions).
func (p *Prometheus) Placed(alias, deployment, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.placed[[3]string{alias, deployment, reason}]++
}

// CooledOff counts one cool-off of a batch deployment.
func (p *Prometheus) CooledOff(deployment, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cooloffs[[2]string{deployment, reason}]++
}

// Fallback counts one batch part whose deadline fallback started, by
// alias and the rule's reason (package batch's FallbackCounter).
func (p *Prometheus) Fallback(alias, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fallbacks[[2]string{alias, reason}]++
}

// batchJobs returns the jobs by state, every known state included (0 when
// it has none), from a read of the job table at most JobsTTL old; nil when
// there is no job table or its read failed.
func (p *Prometheus) batchJobs(ctx context.Context) map[[1]string]int64 {
	if p.o.Jobs == nil {
		return nil
	}
	now := p.o.Now()
	p.jobsMu.Lock()
	counts, fresh := p.jobs, p.jobs != nil && now.Sub(p.jobsRead) < p.o.JobsTTL
	p.jobsMu.Unlock()
	if !fresh {
		v, err, _ := p.flight.Do("jobs", func() (any, error) {
			// A scrape that found the count old while another was reading it
			// takes that read's.
			now := p.o.Now()
			p.jobsMu.Lock()
			c, fresh := p.jobs, p.jobs != nil && now.Sub(p.jobsRead) < p.o.JobsTTL
			p.jobsMu.Unlock()
			if fresh {
				return c, nil
			}
			// The read is shared: one scraper going away does not fail the others.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.o.JobsTimeout)
			defer cancel()
			var err error
			c, err = p.o.Jobs.CountByState(ctx)
			p.jobsMu.Lock()
			p.jobs, p.jobsRead = c, p.o.Now()
			if err != nil {
				p.jobs = nil
			}
			p.jobsMu.Unlock()
			return c, err
		})
		if err != nil {
			p.o.Log.Warn().Err(err).Msg("offpath_batch_jobs: the job table could not be read; the gauge shows no series")
			return nil
		}
		counts = v.(map[string]int)
	}
	out := map[[1]string]int64{}
	for _, st := range batch.States() {
		out[[1]string{string(st)}] = 0
	}
	for st, n := range counts {
		out[[1]string{st}] = int64(n)
	}
	return out
}

// ServeHTTP writes the metrics (text exposition format 0.0.4).
func (p *Prometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	jobs := p.batchJobs(r.Context())
	var b strings.Builder
	p.mu.Lock()
	write(&b, "offpath_tokens_total", "Tokens the ledger recorded, by tenant, alias, deployment, path and kind.", "counter", tokenLabels, p.tokens)
	write(&b, "offpath_tokens_corrected_total", "Tokens taken off ledger rows rewritten lower.", "counter", tokenLabels, p.corrected)
	write(&b, "offpath_documents_total", "Queue-path deliveries settled, by tenant and outcome (done, refused, rejected, transient).", "counter",
		[]string{"tenant", "outcome"}, p.documents)
	write(&b, "offpath_batch_placements_total", "Batch parts submitted, by alias, the deployment the scheduler chose and why (cheapest, cheaper_full, cheaper_cooling_off).", "counter",
		[]string{"alias", "deployment", "reason"}, p.placed)
	write(&b, "offpath_batch_cooloffs_total", "Times a batch deployment started cooling off, by deployment and reason (token_limit_exceeded, errors).", "counter",
		[]string{"deployment", "reason"}, p.cooloffs)
	write(&b, "offpath_batch_fallbacks_total", "Batch parts whose remaining items went to the synchronous deployment for their job's complete_by, by alias and reason (held, validating, no_progress, slow, late).", "counter",
		[]string{"alias", "reason"}, p.fallbacks)
	write(&b, "offpath_batch_jobs", "Batch jobs by state, read from the job table.", "gauge", []string{"state"}, jobs)
	p.mu.Unlock()
	_, _ = w.Write([]byte(b.String()))
}

// write writes one metric family, its series sorted by their label values.
func write[K [1]string | [2]string | [3]string | [5]string](b *strings.Builder, name, help, typ string, labels []string, m map[K]int64) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	type series struct {
		values []string
		v      int64
	}
	all := make([]series, 0, len(m))
	for k, v := range m {
		all = append(all, series{values: keyValues(k), v: v})
	}
	slices.SortFunc(all, func(a, c series) int { return slices.Compare(a.values, c.values) })
	for _, s := range all {
		pairs := make([]string, len(labels))
		for i, l := range labels {
			pairs[i] = l + "=" + label(s.values[i])
		}
		fmt.Fprintf(b, "%s{%s} %d\n", name, strings.Join(pairs, ","), s.v)
	}
}

func keyValues[K [1]string | [2]string | [3]string | [5]string](k K) []string {
	switch k := any(k).(type) {
	case [1]string:
		return k[:]
	case [2]string:
		return k[:]
	case [3]string:
		return k[:]
	case [5]string:
		return k[:]
	}
	return nil
}

// label quotes a label value as the text format wants: backslash, double
// quote and newline escaped.
func label(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v) + `"`
}
