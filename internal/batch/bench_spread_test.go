package batch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/catalog"
)

// BenchmarkSpread prices a 100,000-line job spread over two deployments
// against the same job on one. The job has five parts of 20,000 lines; the
// cheaper deployment's enqueued-token quota holds three, so the scheduler
// sends three there and two to the dearer one (a Data Zone deployment, 10%
// dearer), all in the first tick. The job runs to its harvest on the
// simulator; its ledger rows are the spread's cost. The same rows priced at
// the cheaper deployment's price are what the job would cost on it alone,
// where the two parts that did not fit would have waited for the first
// three to end (a second round of Azure's turnaround, up to its 24-hour
// window); at the dearer one's, what it costs there alone.
//
//	go test -run '^$' -bench Spread -benchtime 1x ./internal/batch/
func BenchmarkSpread(b *testing.B) {
	const n, perPart = 100_000, 20_000
	models, sim := twoDeployments(0)
	for range b.N {
		e := newEnv(b, envConfig{models: models, sim: sim, tweak: func(o *batch.Options) {
			o.PartLimits = batchfile.Limits{MaxLines: perPart}
		}})
		j := e.submit("contoso", items(n, "t"))
		if len(j.Parts) != n/perPart {
			b.Fatalf("%d parts, want %d", len(j.Parts), n/perPart)
		}
		e.opts.Quota = map[string]int64{cheapDep: j.Parts[0].EstimatedTokens*3 + j.Parts[0].EstimatedTokens/2}
		e.svc = e.service()
		if _, err := e.svc.Poll(e.ctx()); err != nil {
			b.Fatal(err)
		}
		first := e.get(j.ID)
		onDep := map[string]int{}
		for _, p := range first.Parts {
			if p.Status != batch.PartSubmitted && p.Status != batch.PartDone {
				b.Fatalf("part %d is %s after the first tick, want submitted", p.Index, p.Status)
			}
			onDep[p.Deployment]++
		}
		if onDep[cheapDep] != 3 || onDep[dearDep] != 2 {
			b.Fatalf("parts per deployment after the first tick: %v, want 3 on %s and 2 on %s", onDep, cheapDep, dearDep)
		}
		j = e.pollUntil(10*time.Minute, harvested, j.ID)[j.ID]
		rows, err := e.ledger.Month(context.Background(), j.Tenant, j.Month())
		if err != nil {
			b.Fatal(err)
		}
		cheap := mustPrice(b, e.catalog, cheapDep)
		dear := mustPrice(b, e.catalog, dearDep)
		var spread, allCheap, allDear catalog.Money
		var tokens int64
		for _, r := range rows {
			spread += r.Cost
			allCheap += cheap.Cost(r.PromptTokens, r.CachedTokens, r.CompletionTokens)
			allDear += dear.Cost(r.PromptTokens, r.CachedTokens, r.CompletionTokens)
			tokens += r.PromptTokens + r.CompletionTokens
		}
		if len(rows) != len(j.Parts) || spread <= allCheap || spread >= allDear {
			b.Fatalf("%d ledger rows for %d parts; spread %s, cheaper alone %s, dearer alone %s", len(rows), len(j.Parts), spread.Dollars(), allCheap.Dollars(), allDear.Dollars())
		}
		extra := float64(spread-allCheap) / float64(allCheap) * 100
		b.ReportMetric(float64(spread)/1e9, "spread-$")
		b.ReportMetric(float64(allCheap)/1e9, "cheaper-alone-$")
		b.ReportMetric(float64(allDear)/1e9, "dearer-alone-$")
		b.ReportMetric(extra, "extra-%")
		b.Logf("%d lines, %d tokens in %d parts: spread 3+2 over two deployments %s, all on the cheaper one %s (+%.1f%% to submit every part at once instead of two parts a round later), all on the dearer one %s",
			n, tokens, len(j.Parts), spread.Dollars(), allCheap.Dollars(), extra, allDear.Dollars())
	}
}

func mustPrice(tb testing.TB, c *catalog.Catalog, dep string) catalog.Price {
	tb.Helper()
	p, err := c.Price("summarize", catalog.Batch, dep)
	if err != nil {
		tb.Fatal(fmt.Errorf("price of %s: %w", dep, err))
	}
	return p
}
