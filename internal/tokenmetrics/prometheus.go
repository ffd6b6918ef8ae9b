package tokenmetrics

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/offpath/offpath/internal/ledger"
)

// Prometheus counts the ledger's changes per tenant, alias, deployment,
// path and kind of token, and serves them in Prometheus' text format
// (offpath_tokens_total) for clusters that scrape their workers. Counters
// are this process's: they start at zero when it starts, as Prometheus
// counters do, and a negative change (a row rewritten lower) is counted
// in offpath_tokens_corrected_total rather than lowering the counter.
type Prometheus struct {
	mu        sync.Mutex
	tokens    map[promKey]int64
	corrected map[promKey]int64
}

type promKey struct {
	tenant, alias, deployment, path, kind string
}

// NewPrometheus returns an empty set of counters.
func NewPrometheus() *Prometheus {
	return &Prometheus{tokens: map[promKey]int64{}, corrected: map[promKey]int64{}}
}

// Emit counts the samples.
func (p *Prometheus) Emit(_ context.Context, samples []ledger.Sample) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range samples {
		for kind, v := range map[string]int64{"prompt": s.PromptTokens, "completion": s.CompletionTokens} {
			k := promKey{s.Tenant, s.Alias, s.Deployment, string(s.Path), kind}
			if v >= 0 {
				p.tokens[k] += v
			} else {
				p.corrected[k] -= v
			}
		}
	}
}

// ServeHTTP writes the counters (text exposition format 0.0.4).
func (p *Prometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var b strings.Builder
	p.mu.Lock()
	write(&b, "offpath_tokens_total", "Tokens the ledger recorded, by tenant, alias, deployment, path and kind.", p.tokens)
	write(&b, "offpath_tokens_corrected_total", "Tokens taken off ledger rows rewritten lower.", p.corrected)
	p.mu.Unlock()
	_, _ = w.Write([]byte(b.String()))
}

func write(b *strings.Builder, name, help string, m map[promKey]int64) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
	keys := make([]promKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, c promKey) int {
		return cmp.Or(cmp.Compare(a.tenant, c.tenant), cmp.Compare(a.alias, c.alias), cmp.Compare(a.deployment, c.deployment),
			cmp.Compare(a.path, c.path), cmp.Compare(a.kind, c.kind))
	})
	for _, k := range keys {
		fmt.Fprintf(b, "%s{tenant=%s,alias=%s,deployment=%s,path=%s,kind=%s} %d\n", name,
			label(k.tenant), label(k.alias), label(k.deployment), label(k.path), label(k.kind), m[k])
	}
}

// label quotes a label value as the text format wants: backslash, double
// quote and newline escaped.
func label(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v) + `"`
}
