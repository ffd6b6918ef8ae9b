package nightly_test

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/nightly"
	"github.com/offpath/offpath/internal/report"
	"github.com/offpath/offpath/internal/testing/apptest"
	"github.com/offpath/offpath/internal/testing/poll"
)

// startApp runs the whole app with a support tenant, the simulator's batch
// clock speeded up, and ticket links configured.
func startApp(t *testing.T, linesPerMinute float64) *apptest.Stack {
	speed := 600.0
	return apptest.Start(t, apptest.Config{
		Sim:     aoaisim.Config{Speed: &speed, Batch: aoaisim.BatchConfig{LinesPerMinute: linesPerMinute}},
		Tenants: map[string][]string{"support": {"summarize"}, "contoso": {"summarize"}},
		// Info level: the morning_report_written event is an info line.
		Settings: map[string]string{"OFFPATH_TICKETS_URL": "https://support.example.com/tickets/{id}", "OFFPATH_LOG_LEVEL": "info"},
	})
}

// upload writes a blob through the stack's storage.
func upload(t *testing.T, st *apptest.Stack, containerName, name, body string) {
	t.Helper()
	ctx := context.Background()
	_, _ = st.Blobs.CreateContainer(ctx, containerName, nil)
	if _, err := st.Blobs.UploadBuffer(ctx, containerName, name, []byte(body), nil); err != nil {
		t.Fatalf("upload %s: %v", name, err)
	}
}

func readBlob(t *testing.T, st *apptest.Stack, containerName, name string) (string, bool) {
	t.Helper()
	store := blobstore.New(st.Blobs, blobstore.Options{})
	r, _, err := store.Open(context.Background(), containerName, name)
	if err != nil {
		return "", false
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// TestEndToEnd_NightOf2000Tickets: a day of 2,000 tickets, some refused by
// the content filter and some malformed, goes through the dev host: the
// nightly timer fired twice makes one job, the poll timer harvests it, the
// morning report lists every ticket, the refusals apart, the skipped
// documents with their reasons, and the ledger's tokens and cost.
func TestEndToEnd_NightOf2000Tickets(t *testing.T) {
	t.Parallel()
	st := startApp(t, 60_000)
	dayName := nightly.DayOf(time.Now()).Format(time.DateOnly)

	upload(t, st, "tickets", dayName+"/export-1.jsonl", ticketLines("T", 1500, func(i int) string {
		if i%50 == 7 {
			return "My neighbour asked SIM_FILTER_PROMPT about the invoice."
		}
		return fmt.Sprintf("Order %d arrived damaged; the box was crushed on one side.", i)
	})+"{\"id\": broken\n"+`{"subject":"no id here","body":"lost"}`+"\n")
	var wg sync.WaitGroup
	for i := range 500 {
		wg.Go(func() {
			upload(t, st, "tickets", fmt.Sprintf("%s/single-%03d.json", dayName, i),
				fmt.Sprintf(`{"id":"S-%d","subject":"Single %d","customer":"acme","body":"The dashboard shows <b>%d</b> errors.","created_at":"2026-03-14T09:30:00Z"}`, i, i, i))
		})
	}
	wg.Wait()
	upload(t, st, "tickets", dayName+"/zz-dup.json", `{"id":"T-1","body":"exported twice"}`)
	upload(t, st, "tickets", dayName+"/zz-huge.json", `{"id":"H-1","body":"`+strings.Repeat("x", 5<<20)+`"}`)

	st.Fire("nightly-summaries")
	st.Fire("nightly-summaries") // the timer fired twice for the same night

	htmlName, mdName := nightly.ReportBlobs(dayName)
	var md string
	poll.Until(t, 3*time.Minute, "the morning report", func() bool {
		var ok bool
		md, ok = readBlob(t, st, "reports", mdName) // written after the HTML
		return ok
	})
	st.FireAndWait("nightly-summaries") // and once more after the harvest
	html, _ := readBlob(t, st, "reports", htmlName)
	// The batch-poll reply that wrote the report carries the event line the
	// no-morning-report rule counts, as Application Insights records it.
	if tr := st.WaitRuleMatched("offpath-no-morning-report", "invocation", 30*time.Second); tr.Function != "batch-poll" {
		t.Errorf("the morning report event came from %+v", tr)
	}

	ctx := context.Background()
	jobs, err := st.Jobs.List(ctx, "support", "", "", 10)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("support has %d jobs (%v), want 1", len(jobs), err)
	}
	job := jobs[0]
	c := job.Counts()
	if job.State != batch.Harvested || job.Items != 2000 || c.OK != 1970 || c.Refused != 30 {
		t.Fatalf("job %s: %s, %d items, counts %+v; want 2,000 items, 1,970 ok, 30 refused", job.ID, job.State, job.Items, c)
	}

	// The report's structure: 2,000 tickets, the summaries and the
	// refusals apart, the skipped documents with their reasons.
	count := func(re string) int { return len(regexp.MustCompile(re).FindAllStringIndex(html, -1)) }
	if n := count(`<li class="ticket">`); n != 1970 {
		t.Errorf("%d summaries in the report, want 1,970", n)
	}
	refused := html[strings.Index(html, `<section id="refused">`):strings.Index(html, `<section id="failed">`)]
	if n := len(regexp.MustCompile(`<tr><td class="id">`).FindAllStringIndex(refused, -1)); n != 30 {
		t.Errorf("%d refusals listed, want 30", n)
	}
	for _, want := range []string{`data-count="tickets">2,000<`, `data-count="refused">30<`, `data-count="skipped">4<`,
		"zz-dup.json", "duplicate id", "zz-huge.json", `href="https://support.example.com/tickets/S-499"`} {
		if !strings.Contains(html, want) {
			t.Errorf("report HTML lacks %q", want)
		}
	}
	// The model's summaries may quote their ticket (the simulator's answers
	// are the prompt's own sentences); nothing else in the page may.
	if strings.Contains(regexp.MustCompile(`<p class="summary">[^<]*</p>`).ReplaceAllString(html, ""), "The dashboard shows") {
		t.Error("the report quotes a ticket's body outside the model's summaries")
	}

	// Cost and tokens are the ledger's.
	entries, err := st.Ledger.Month(ctx, "support", job.Month())
	if err != nil {
		t.Fatal(err)
	}
	var u ledger.Usage
	for _, e := range entries {
		u.Add(e.Usage)
	}
	if u.PromptTokens == 0 || u.PromptTokens != job.Usage().PromptTokens || u.CompletionTokens != job.Usage().CompletionTokens {
		t.Fatalf("ledger %+v, job usage %+v", u, job.Usage())
	}
	for _, want := range []string{`data-count="tokens">` + report.Number(u.PromptTokens+u.CompletionTokens) + `<`,
		`title="` + u.Cost.Dollars() + ` USD"`} {
		if !strings.Contains(html, want) {
			t.Errorf("report HTML lacks %q", want)
		}
	}
	if !strings.Contains(md, "| 2,000 | 1,970 | 30 | 0 | 4 |") {
		t.Errorf("the Markdown counts row is not the expected one:\n%s", md[:min(len(md), 1200)])
	}
}

// TestEndToEnd_ReportDeadline: at the deadline the job still runs, so the
// deadline timer raises one alert naming the job and its state.
func TestEndToEnd_ReportDeadline(t *testing.T) {
	t.Parallel()
	st := startApp(t, 1) // one line a simulated minute: hours for the job
	dayName := nightly.DayOf(time.Now()).Format(time.DateOnly)
	upload(t, st, "tickets", dayName+"/a.jsonl", ticketLines("D", 20, func(int) string { return "The laptop is slow." }))

	st.Fire("nightly-summaries")
	var job batch.Job
	poll.Until(t, time.Minute, "the job to run at Azure", func() bool {
		jobs, err := st.Jobs.List(context.Background(), "support", "", "", 10)
		if err != nil || len(jobs) == 0 {
			return false
		}
		job = jobs[0]
		return job.State == batch.Submitted
	})
	st.FireAndWait("report-deadline")
	a := st.WaitAlert(nightly.AlertReportMissing, job.ID, 30*time.Second)
	if !strings.Contains(a.Message, job.ID) || !strings.Contains(a.Message, "submitted") || a.Fields["day"] != dayName {
		t.Errorf("alert %+v: want the job, its state and the day", a)
	}
	// What Application Insights gets from the report-deadline reply fires
	// the rule that pages for it.
	if tr := st.WaitRuleMatched("offpath-morning-report-missing", "invocation", 30*time.Second); tr.Function != "report-deadline" {
		t.Errorf("the rule fired on a trace of %s: %+v", tr.Function, tr)
	}
	if n := st.CountAlerts(nightly.AlertReportMissing, ""); n != 1 { // the run has finished: its alerts are all in
		t.Errorf("%d morning_report_missing alerts, want 1", n)
	}
}
