package report_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/report"
)

// hostile is ticket text that must come out as text.
const hostile = `<script>document.body.dataset.pwned=1</script><img src=x onerror="document.body.dataset.pwned=1"> **bold** [x](javascript:alert(1)) | a | b & c`

func newRenderer(tb testing.TB) *report.Renderer {
	tb.Helper()
	r, err := report.New(report.Options{TicketURL: "https://support.example.com/tickets/{id}"})
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return r
}

// sample is a night of n tickets: mostly summarised, a few refused, failed,
// expired and cancelled, with skipped documents and one hostile ticket of each
// outcome at the end.
func sample(n int) *report.Report {
	subjects := []string{
		"Cannot log in after password reset", "Invoice charged twice in March", "Export to CSV times out",
		"Request: dark mode for the dashboard", "Webhook deliveries delayed by hours", "SSO with Okta fails for new users",
		"Refund for unused seats", "Mobile app crashes on upload", "", "API returns 500 on large payloads",
	}
	summaries := []string{
		"The customer cannot log in since resetting their password and sees an expired-token error. Support asked them to clear cookies; the issue persists and needs engineering.",
		"The March invoice was charged twice to the same card. Billing confirmed the duplicate and a refund of the second charge is pending.",
		"Exports of more than 50,000 rows time out after 60 seconds. A workaround with filtered exports was offered while the limit is reviewed.",
		"The customer asks for a dark theme on the dashboard for night shifts. It was logged as a feature request with three other votes.",
		"Webhook events arrive up to four hours late since Tuesday. The customer's endpoint answers slowly and retries pile up.",
	}
	customers := []string{"Northwind Traders", "Contoso Ltd", "Fabrikam", "Tailspin Toys", "Adventure Works", "Wide World Importers"}
	rep := &report.Report{
		Day:       time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC),
		JobID:     "j7Hq2-x",
		Tenant:    "support",
		Generated: time.Date(2026, 3, 15, 6, 2, 0, 0, time.UTC),
		Unchanged: 312,
		Usage:     ledger.Usage{PromptTokens: int64(n) * 1_180, CachedTokens: int64(n) * 200, CompletionTokens: int64(n) * 62, Cost: catalog.Money(int64(n) * 88_500)},
	}
	outcomes := []report.Outcome{report.OK, report.Refused, report.Failed, report.Expired, report.Cancelled}
	for i := range n {
		it := report.Item{
			TicketID: fmt.Sprintf("T-%05d", 10_000+i),
			Subject:  subjects[i%len(subjects)],
			Customer: customers[i%len(customers)],
			Outcome:  report.OK,
		}
		switch {
		case n-i <= len(outcomes):
			it.Outcome = outcomes[n-i-1]
			it.Subject, it.Customer = hostile, hostile
		case i%29 == 7:
			it.Outcome = report.Refused
		case i%53 == 11:
			it.Outcome = report.Failed
		case i%97 == 13:
			it.Outcome = report.Expired
		}
		switch it.Outcome {
		case report.OK:
			it.Summary = summaries[i%len(summaries)]
			if n-i <= len(outcomes) {
				it.Summary = hostile
			}
		case report.Refused:
			it.Reason = "content_filter: the prompt was flagged (hate: medium)"
		case report.Failed:
			it.Reason = "server_error: the model did not answer"
		case report.Expired:
			it.Reason = "the job expired before this request ran"
		case report.Cancelled:
			it.Reason = "the job was cancelled by an operator"
		}
		if n-i <= len(outcomes) && it.Reason != "" {
			it.Reason = hostile
		}
		rep.Items = append(rep.Items, it)
	}
	rep.Skipped = []report.Skipped{
		{Blob: "2026-03-14/export-0930.jsonl", Line: 17, Reason: "malformed JSON at byte 212"},
		{Blob: "2026-03-14/export-0930.jsonl", Line: 18, Reason: "missing id"},
		{Blob: "2026-03-14/export-1400.jsonl", Line: 3, TicketID: "T-10003", Reason: "body too large (5.0 MiB of JSON; limit 256 KiB)"},
		{Blob: "2026-03-14/T-10001.json", TicketID: "T-10001", Reason: "duplicate id (different content); kept the first, in 2026-03-14/export-0930.jsonl line 2"},
		{Blob: "2026-03-14/" + hostile + ".json", Reason: hostile},
	}
	rep.SkippedTotal = 7
	return rep
}
