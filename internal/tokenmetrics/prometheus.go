package tokenmetrics

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/outcome"
)

// Prometheus serves this process's metrics in Prometheus' text format, for
// clusters that scrape their workers:
//
//	offpath_tokens_total{tenant,alias,deployment,path,kind}  the ledger's changes
//	offpath_tokens_corrected_total{...}                      tokens taken off rows rewritten lower
//	offpath_documents_total{tenant,outcome}                  queue-path deliveries settled: done, refused, rejected, transient
//	offpath_batch_jobs{state}                                batch jobs by state, as the last poll tick read them
//
// Counters are this process's: they start at zero when it starts, as
// Prometheus counters do, and a negative token change is counted in
// offpath_tokens_corrected_total rather than lowering the counter.
type Prometheus struct {
	mu        sync.Mutex
	tokens    map[[5]string]int64
	corrected map[[5]string]int64
	documents map[[2]string]int64
	jobs      map[[1]string]int64
}

var tokenLabels = []string{"tenant", "alias", "deployment", "path", "kind"}

// NewPrometheus returns an empty set of metrics.
func NewPrometheus() *Prometheus {
	return &Prometheus{tokens: map[[5]string]int64{}, corrected: map[[5]string]int64{},
		documents: map[[2]string]int64{}, jobs: map[[1]string]int64{}}
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

// SetBatchJobs replaces the batch jobs' gauge with count, jobs per state.
// A state absent from count that was present before reads 0, so that a
// scrape sees it empty rather than stuck at its last value.
func (p *Prometheus) SetBatchJobs(count map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.jobs {
		p.jobs[k] = 0
	}
	for state, n := range count {
		p.jobs[[1]string{state}] = int64(n)
	}
}

// ServeHTTP writes the metrics (text exposition format 0.0.4).
func (p *Prometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var b strings.Builder
	p.mu.Lock()
	write(&b, "offpath_tokens_total", "Tokens the ledger recorded, by tenant, alias, deployment, path and kind.", "counter", tokenLabels, p.tokens)
	write(&b, "offpath_tokens_corrected_total", "Tokens taken off ledger rows rewritten lower.", "counter", tokenLabels, p.corrected)
	write(&b, "offpath_documents_total", "Queue-path deliveries settled, by tenant and outcome (done, refused, rejected, transient).", "counter",
		[]string{"tenant", "outcome"}, p.documents)
	write(&b, "offpath_batch_jobs", "Batch jobs by state, as the last poll tick of this process read them.", "gauge", []string{"state"}, p.jobs)
	p.mu.Unlock()
	_, _ = w.Write([]byte(b.String()))
}

// write writes one metric family, its series sorted by their label values.
func write[K [1]string | [2]string | [5]string](b *strings.Builder, name, help, typ string, labels []string, m map[K]int64) {
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

func keyValues[K [1]string | [2]string | [5]string](k K) []string {
	switch k := any(k).(type) {
	case [1]string:
		return k[:]
	case [2]string:
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
