package nightly_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/nightly"
	"github.com/offpath/offpath/internal/report"
)

// TestRun_OneJobThenTheReport: a day's tickets, hostile ones among them,
// become one job; running the day again submits nothing; once the job is
// harvested the report is written once, with refusals and skips listed,
// and its cost and tokens are the ledger's.
func TestRun_OneJobThenTheReport(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 6000)
	e.put("2026-03-14/bulk.jsonl", ticketLines("T", 40, func(i int) string {
		if i%10 == 3 {
			return "Please help SIM_FILTER_PROMPT with my account."
		}
		return "The VPN drops every hour since the update."
	})+"{not json\n"+`{"subject":"no id","body":"x"}`+"\n")
	e.put("2026-03-14/T-5.json", `{"id":"T-5","body":"a later copy"}`)
	e.put("2026-03-14/huge.json", `{"id":"H-1","body":"`+strings.Repeat("a", 5<<20)+`"}`)
	e.put("2026-03-14/readme.txt", "not a ticket")
	e.put("2026-03-15/other-day.json", `{"id":"X-1","body":"tomorrow"}`)

	n, err := e.svc.Run(e.ctx(), day)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n.JobID == "" || n.Collected.New != 40 || n.Collected.SkippedTotal != 5 || !n.HashesRecorded {
		t.Fatalf("night %+v: want a job of 40 tickets, 5 skipped, hashes recorded", n)
	}
	again, err := e.service().Run(e.ctx(), day)
	if err != nil || again.JobID != n.JobID {
		t.Fatalf("second Run = %+v, %v; want the same job %s", again, err, n.JobID)
	}
	if jobs, _, _ := e.batch.List(e.ctx(), "support", "", "", 10); len(jobs) != 1 {
		t.Fatalf("%d jobs for the day, want 1", len(jobs))
	}
	if w, err := e.svc.WriteReports(e.ctx()); err != nil || w != 0 {
		t.Fatalf("WriteReports before the harvest = %d, %v; want 0", w, err)
	}

	job := e.harvest(n.JobID)
	if w, err := e.svc.WriteReports(e.ctx()); err != nil || w != 1 {
		t.Fatalf("WriteReports = %d, %v; want 1", w, err)
	}
	if w, _ := e.svc.WriteReports(e.ctx()); w != 0 {
		t.Fatalf("WriteReports again wrote %d", w)
	}
	md := e.read(e.reports, "2026-03-14.md")
	html := e.read(e.reports, "2026-03-14.html")
	c := job.Counts()
	if c.OK != 36 || c.Refused != 4 {
		t.Fatalf("job counts %+v, want 36 ok and 4 refused", c)
	}
	for _, want := range []string{"T-0", "T-39", "Subject 7", "duplicate id", "readme.txt", "huge.json", "missing", "https://support.example.com/tickets/T-3"} {
		if !strings.Contains(html, want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
	if strings.Contains(html, "X-1") {
		t.Error("the report lists a ticket of another day")
	}
	entries, err := e.ledger.Month(e.ctx(), "support", job.Month())
	if err != nil || len(entries) != 1 {
		t.Fatalf("ledger: %d entries, %v", len(entries), err)
	}
	u := entries[0]
	if u.PromptTokens != job.Usage().PromptTokens || u.CompletionTokens != job.Usage().CompletionTokens || u.Cost <= 0 {
		t.Fatalf("ledger %+v vs job usage %+v", u.Usage, job.Usage())
	}
	for _, want := range []string{report.Dollars(u.Cost), report.Number(u.PromptTokens + u.CompletionTokens), "36", "4"} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown report lacks %q", want)
		}
	}
	got, err := e.nights.Get(e.ctx(), "support", "2026-03-14")
	if err != nil || !got.Reported() || got.ReportHTML != "2026-03-14.html" {
		t.Fatalf("night after the report: %+v, %v", got, err)
	}
	if missing, err := e.svc.CheckDeadline(e.ctx(), day); err != nil || missing || len(e.alerts.Named(nightly.AlertReportMissing)) != 0 {
		t.Fatalf("CheckDeadline with the report written = %v, %v", missing, err)
	}
}

// TestRun_Concurrent: two runs of one day at once make one job, and the
// loser's files are gone.
func TestRun_Concurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 6000)
	e.put("2026-03-14/a.jsonl", ticketLines("C", 200, func(int) string { return "The printer is on fire." }))
	var wg sync.WaitGroup
	nights := make([]nightly.Night, 3)
	errs := make([]error, 3)
	for i := range nights {
		wg.Go(func() { nights[i], errs[i] = e.service().Run(e.ctx(), day) })
	}
	wg.Wait()
	for i := range nights {
		if errs[i] != nil || nights[i].JobID == "" || nights[i].JobID != nights[0].JobID {
			t.Fatalf("run %d: %+v, %v; want job %s", i, nights[i], errs[i], nights[0].JobID)
		}
	}
	if jobs, _, _ := e.batch.List(e.ctx(), "support", "", "", 10); len(jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(jobs))
	}
	names, err := e.store.List(e.ctx(), e.cont.Uploads, "support/nightly/2026-03-14/")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if !strings.Contains(name, nights[0].Run) || strings.HasSuffix(name, "tickets.jsonl") {
			t.Errorf("left behind: %s", name)
		}
	}
}

// TestRun_OnlyChangedTicketsNextDay: a ticket exported again unchanged is
// not sent again; an edited one is.
func TestRun_OnlyChangedTicketsNextDay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 6000)
	e.put("2026-03-14/a.jsonl", ticketLines("D", 3, func(int) string { return "Cannot log in." }))
	if _, err := e.svc.Run(e.ctx(), day); err != nil {
		t.Fatal(err)
	}
	e.put("2026-03-15/a.jsonl", ticketLines("D", 2, func(i int) string {
		if i == 1 {
			return "Cannot log in. Update: also cannot reset the password."
		}
		return "Cannot log in."
	}))
	n, err := e.svc.Run(e.ctx(), day.AddDate(0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if n.Collected.New != 1 || n.Collected.Unchanged != 1 || n.JobID == "" {
		t.Fatalf("next day: %+v; want 1 new, 1 unchanged", n.Collected)
	}
}

// TestRun_EmptyDay: no new tickets make no job, and the report is written
// at once.
func TestRun_EmptyDay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 6000)
	e.put("2026-03-14/bad.json", "{")
	n, err := e.svc.Run(e.ctx(), day)
	if err != nil {
		t.Fatal(err)
	}
	if n.JobID != "" || !n.Reported() {
		t.Fatalf("empty day: %+v; want no job and a report", n)
	}
	if md := e.read(e.reports, "2026-03-14.md"); !strings.Contains(md, "bad.json") {
		t.Errorf("the report does not list the skipped file:\n%s", md)
	}
	if _, err := e.batch.JobByKey(e.ctx(), "support", nightly.IdempotencyKey("2026-03-14")); !errors.Is(err, batch.ErrNotFound) {
		t.Errorf("JobByKey = %v, want no job", err)
	}
}

// TestRun_NoTicketsContainer: an account where no ticket was ever dropped
// has no tickets container; the night is an empty day with its report.
func TestRun_NoTicketsContainer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 6000)
	if _, err := e.tickets.Delete(e.ctx(), nil); err != nil {
		t.Fatal(err)
	}
	n, err := e.svc.Run(e.ctx(), day)
	if err != nil {
		t.Fatalf("Run without a tickets container = %v, want an empty day", err)
	}
	if n.JobID != "" || !n.Reported() || n.Collected.Tickets != 0 {
		t.Fatalf("no tickets container: %+v; want no job and a report", n)
	}
	if md := e.read(e.reports, "2026-03-14.md"); md == "" {
		t.Error("no report for the empty day")
	}
}

// TestCheckDeadline: a day without a run, and a day whose job still runs,
// each raise one alert that says where things stand.
func TestCheckDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1) // one line a simulated minute: the job runs for hours
	if missing, err := e.svc.CheckDeadline(e.ctx(), day); err != nil || !missing {
		t.Fatalf("CheckDeadline without a run = %v, %v", missing, err)
	}
	a := e.alerts.Named(nightly.AlertReportMissing)
	if len(a) != 1 || a[0].Fields["state"] != "not_submitted" || !strings.Contains(a[0].Message, "2026-03-14") {
		t.Fatalf("alerts %+v", a)
	}

	e.put("2026-03-14/a.jsonl", ticketLines("S", 50, func(int) string { return "Slow laptop." }))
	n, err := e.svc.Run(e.ctx(), day)
	if err != nil {
		t.Fatal(err)
	}
	ctx := e.ctx()
	for range 3 {
		if _, err := e.batch.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if missing, err := e.svc.CheckDeadline(e.ctx(), day); err != nil || !missing {
		t.Fatalf("CheckDeadline with the job running = %v, %v", missing, err)
	}
	a = e.alerts.Named(nightly.AlertReportMissing)
	if len(a) != 2 || a[1].Job != n.JobID || !strings.Contains(a[1].Message, n.JobID) || !strings.Contains(a[1].Message, "submitted") {
		t.Fatalf("alerts %+v; want the second to name job %s, submitted", a, n.JobID)
	}
}

// TestRun_FailureAlerts: a run that cannot submit (here: the support tenant
// does not exist) fails, records nothing, and alerts at once.
func TestRun_FailureAlerts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 6000)
	e.put("2026-03-14/a.jsonl", ticketLines("F", 3, func(int) string { return "Broken." }))
	e.opts.Tenant = "nosuch"
	if _, err := e.service().Run(e.ctx(), day); err == nil {
		t.Fatal("Run for a tenant that does not exist succeeded")
	}
	a := e.alerts.Named(nightly.AlertRunFailed)
	if len(a) != 1 || a[0].Fields["day"] != "2026-03-14" || !strings.Contains(a[0].Message, "nosuch") {
		t.Fatalf("alerts %+v; want one nightly_failed naming the day and the tenant", a)
	}
	if _, err := e.nights.Get(e.ctx(), "nosuch", "2026-03-14"); !errors.Is(err, nightly.ErrNotFound) {
		t.Errorf("a failed run left a record: %v", err)
	}
	if names, _ := e.store.List(e.ctx(), e.cont.Uploads, "nosuch/"); len(names) != 0 {
		t.Errorf("a failed run left files: %v", names)
	}
}
