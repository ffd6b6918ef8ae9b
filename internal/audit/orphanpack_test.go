package audit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/audit"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/ledger"
)

// TestRun_OrphanedPack: a pack's batch (metadata tenant batch.PackTenant)
// whose pack row is gone is booked once it ends, never to the pack's
// pseudo-tenant: to unattributed, whole, with a note that says it is a
// pack and names the jobs its lines are of, with their line counts, so
// that an operator can attribute it; the alert says the same.
func TestRun_OrphanedPack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	pack, members := newJobID(t), []string{newJobID(t), newJobID(t)}
	var in strings.Builder
	for k, job := range members {
		for line := range 2 + k {
			id := batchfile.Ref{Job: job, Part: 0, Line: line, Check: batchfile.Check("t", fmt.Sprint(line))}.String()
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
	var want lineUsage
	e.readUsage(ended.OutputFileID, &want)
	e.readUsage(ended.ErrorFileID, &want)
	if rows, err := e.tables.ledger.Month(ctx, batch.PackTenant, ledger.MonthOf(epoch)); err != nil || len(rows) != 0 {
		t.Errorf("ledger of %s: %+v (%v), want nothing", batch.PackTenant, rows, err)
	}
	rows, err := e.tables.ledger.Month(ctx, audit.Unattributed, ledger.MonthOf(epoch))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Unit != audit.OrphanUnit(c.Batch.ID) || rows[0].PromptTokens != want.prompt || rows[0].CompletionTokens != want.completion {
		t.Fatalf("unattributed ledger %+v, want one row of the pack's %d/%d tokens", rows, want.prompt, want.completion)
	}
	rec, _ := e.record(audit.KindBatch, c.Batch.ID)
	for k, job := range members {
		if want := fmt.Sprintf("%s (%d)", job, 2+k); !strings.Contains(rec.Note, want) {
			t.Errorf("note %q does not name job %s", rec.Note, want)
		}
	}
}
