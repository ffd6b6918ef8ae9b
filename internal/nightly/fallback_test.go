package nightly_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/nightly"
	"github.com/offpath/offpath/internal/report"
	"github.com/offpath/offpath/internal/testing/clocktest"
)

// A night whose batch Azure keeps validating: the job carries the report's
// deadline, its part falls back to the synchronous deployment when the
// rule says so, and the report is written before the deadline, saying how
// many summaries came from the fallback and what they cost over the batch
// price; every ticket is asked and billed once.
func TestRun_ReportOnTimeThroughTheFallback(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 6000)
	if err := e.sim.SetFaults([]aoaisim.FaultRule{{Deployment: "gpt-4o-mini-batch", HoldValidating: aoaisim.Duration(48 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	c := &clocktest.Ahead{}
	client, err := azopenai.NewQueueClient(azopenai.QueueConfig{Endpoint: e.simURL, APIKey: aoaisim.DefaultKey, AllowHTTP: true}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	e.batchOpts.Now, e.batchOpts.Sync = c.Now, client
	if e.batch, err = batch.New(e.batchOpts); err != nil {
		t.Fatal(err)
	}
	deadline := c.Now().Add(3 * time.Hour).Truncate(time.Minute)
	e.opts.Batches, e.opts.Now, e.opts.Catalog = e.batch, c.Now, e.catalog
	e.opts.ReportDeadline = func(time.Time) time.Time { return deadline }
	e.svc = e.service()

	const tickets = 12
	e.put("2026-03-14/bulk.jsonl", ticketLines("T", tickets, func(int) string { return "The VPN drops every hour since the update." }))
	n, err := e.svc.Run(e.ctx(), day)
	if err != nil {
		t.Fatal(err)
	}
	j, err := e.batch.Get(e.ctx(), "support", n.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if want := deadline.Add(-nightly.DefaultReportLead); !j.CompleteBy.Equal(want) {
		t.Fatalf("the day's job is due %v, want %v (the report's deadline less the lead)", j.CompleteBy, want)
	}
	ctx := e.ctx()
	for j.Parts[0].AzureStatus != "validating" {
		if _, err := e.batch.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		if j, err = e.batch.Get(ctx, "support", n.JobID); err != nil {
			t.Fatal(err)
		}
	}
	// Past the rule's point for a part still validating: 15 min to cancel
	// and harvest, 12 lines at 60 a minute, 30 min to run.
	c.Advance(j.CompleteBy.Sub(c.Now()) - 15*time.Minute - tickets*time.Second - 30*time.Minute + time.Minute)
	risk := c.Now()
	var written time.Time
	for range 400 {
		if _, err := e.batch.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		if w, err := e.svc.WriteReports(ctx); err != nil {
			t.Fatal(err)
		} else if w == 1 {
			written = c.Now()
			break
		}
	}
	if written.IsZero() {
		t.Fatal("the report was not written")
	}
	if !written.Before(deadline) {
		t.Fatalf("report written at %v, after its deadline %v", written, deadline)
	}
	t.Logf("report written %v after the deadline risk, %v before the deadline", written.Sub(risk).Round(time.Millisecond), deadline.Sub(written).Round(time.Second))
	if missing, err := e.svc.CheckDeadline(ctx, day); err != nil || missing {
		t.Fatalf("CheckDeadline = %v, %v", missing, err)
	}

	j, _ = e.batch.Get(ctx, "support", n.JobID)
	if f := j.Parts[0].Fallback; f == nil || f.Reason != batch.RiskValidating || f.Items != tickets {
		t.Fatalf("fallback %+v", j.Parts[0].Fallback)
	}
	if got := e.sim.Stats().Routes[aoaisim.RouteChat]; got != tickets {
		t.Errorf("%d synchronous requests for %d tickets", got, tickets)
	}
	entries, err := e.ledger.Month(ctx, "support", j.Month())
	if err != nil {
		t.Fatal(err)
	}
	var sync, extra int64
	units := map[string]bool{}
	bp, _ := e.catalog.Price("summarize", ledger.Batch, "gpt-4o-mini-batch")
	for _, en := range entries {
		if units[en.Unit] {
			t.Errorf("ledger unit %s twice", en.Unit)
		}
		units[en.Unit] = true
		if strings.Contains(en.Unit, "/sync-") && en.Path == ledger.Queue {
			sync++
			extra += int64(en.Cost - bp.Cost(en.PromptTokens, en.CachedTokens, en.CompletionTokens))
		}
	}
	if sync != tickets || extra <= 0 {
		t.Fatalf("%d fallback ledger rows costing %d over the batch price, want %d rows and more than 0", sync, extra, tickets)
	}
	md := e.read(e.reports, "2026-03-14.md")
	html := e.read(e.reports, "2026-03-14.html")
	if !strings.Contains(md, "except 12 summaries from the synchronous fallback") {
		t.Errorf("the Markdown report does not say how many summaries came from the fallback:\n%s", md)
	}
	var total int64
	for _, en := range entries {
		total += int64(en.Cost)
	}
	for _, want := range []string{report.Dollars(catalog.Money(extra)), report.Dollars(catalog.Money(total))} {
		if !strings.Contains(md, want) || !strings.Contains(html, want) {
			t.Errorf("the reports lack %q", want)
		}
	}
	if !strings.Contains(html, `data-count="fallback">12<`) {
		t.Errorf("the HTML report does not count the fallback's summaries")
	}
}
