package audit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/audit"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/ledger"
)

// TestRun_OrphanedPack: a pack's batch (metadata tenant batch.PackTenant)
// whose pack row is gone is booked once it ends, never to the pack's
// pseudo-tenant, line by line: each line names its job, and a job whose
// row is found is its tenant's (one row per tenant, with exactly its
// jobs' lines' tokens); only the lines of a job that is not found go to
// unattributed. The record's note says how many lines went where and
// names the job not found; the alert says it is a pack; a later run books
// nothing again.
func TestRun_OrphanedPack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	pack := newJobID(t)
	members := []struct {
		job, tenant string // tenant "": no job row
		lines       int
	}{{newJobID(t), "contoso", 2}, {newJobID(t), "fabrikam", 3}, {newJobID(t), "", 4}, {newJobID(t), "contoso", 1}}
	var in strings.Builder
	for k, m := range members {
		if m.tenant != "" {
			if _, err := e.tables.jobs.Create(ctx, batch.Job{ID: m.job, Tenant: m.tenant, Alias: "summarize", State: batch.Submitted,
				Created: time.Now().UTC(), Items: m.lines, Parts: []batch.Part{{Index: 0, Status: batch.PartPending, Lines: m.lines, Pack: pack}}}, ""); err != nil {
				t.Fatal(err)
			}
		}
		for line := range m.lines {
			id := batchfile.Ref{Job: m.job, Part: 0, Line: line, Check: batchfile.Check(m.tenant, fmt.Sprint(line))}.String()
			in.WriteString(chatLine(id, batchDep, fmt.Sprintf("ticket %d of job %d", line, k)))
			in.WriteByte('\n')
		}
	}
	f := e.offpathFile(pack, 0, in.String())
	c, err := e.azure.CreateBatch(ctx, batch.Submission{InputFileID: f.ID, JobID: pack, Part: 0,
		Metadata: map[string]string{"tenant": batch.PackTenant, "alias": "summarize"}})
	if err != nil {
		t.Fatal(err)
	}
	if s := e.run(); s.Orphans != 1 || s.Alerted != 1 {
		t.Fatalf("first run %+v: want the pack an orphan, alerted", s)
	}
	if got := e.alerts.Named(audit.AlertOrphan); len(got) != 1 || !strings.Contains(got[0].Message, "pack") {
		t.Errorf("alerts %+v: want one that says the orphan is a pack", got)
	}
	ended := e.finish(c.Batch.ID)
	if s := e.run(); s.Booked != 1 || s.Errors != 0 {
		t.Fatalf("run after the end %+v: want booked", s)
	}
	unit := audit.OrphanUnit(c.Batch.ID)
	want := map[string]*lineUsage{"contoso": {}, "fabrikam": {}, audit.Unattributed: {}}
	for _, m := range members {
		u := lineUsage{job: m.job}
		e.readUsage(ended.OutputFileID, &u)
		e.readUsage(ended.ErrorFileID, &u)
		if u.lines != int64(m.lines) || u.prompt == 0 {
			t.Fatalf("job %s has %d lines with %d prompt tokens in the pack's files, want %d lines", m.job, u.lines, u.prompt, m.lines)
		}
		w := want[m.tenant]
		if m.tenant == "" {
			w = want[audit.Unattributed]
		}
		w.lines, w.prompt, w.completion = w.lines+u.lines, w.prompt+u.prompt, w.completion+u.completion
	}
	for tenantID, w := range want {
		rows, err := e.tables.ledger.Month(ctx, tenantID, ledger.MonthOf(epoch))
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].Unit != unit || rows[0].PromptTokens != w.prompt || rows[0].CompletionTokens != w.completion ||
			rows[0].Requests != w.lines || rows[0].Cost == 0 || rows[0].Deployment != batchDep {
			t.Errorf("ledger of %s %+v, want one row of %d lines, %d/%d tokens, priced", tenantID, rows, w.lines, w.prompt, w.completion)
		}
	}
	if rows, err := e.tables.ledger.Month(ctx, batch.PackTenant, ledger.MonthOf(epoch)); err != nil || len(rows) != 0 {
		t.Errorf("ledger of %s: %+v (%v), want nothing", batch.PackTenant, rows, err)
	}
	rec, _ := e.record(audit.KindBatch, c.Batch.ID)
	for _, s := range []string{"contoso 3 lines of 2 jobs", "fabrikam 3 lines of 1 jobs", "4 lines whose job is not found", members[2].job + " (4)"} {
		if !strings.Contains(rec.Note, s) {
			t.Errorf("note %q does not say %q", rec.Note, s)
		}
	}
	if s := e.run(); s.Booked != 0 || e.ledger.count(unit) != 3 {
		t.Errorf("a later run %+v, %d ledger writes of %s: want nothing booked again, three rows written once", s, e.ledger.count(unit), unit)
	}
}
