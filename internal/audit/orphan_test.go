package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/audit"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tenant"
)

// TestRun_OrphanedBatch: a batch carrying offpath's submission key that no
// job claims (the job row is gone, or its part has moved on to another
// batch) is not offpath's: one batch_orphaned alert, and once it ends its
// usage is booked once, to the tenant its metadata names if that tenant
// exists, else to unattributed. A batch its job will still adopt (the part
// is pending at the batch's attempt) is offpath's and quiet.
func TestRun_OrphanedBatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		setup      func(e *env, job string) // before the audit
		tenant     bool                     // contoso exists
		wantOrphan bool
	}{
		{"job row lost", func(*env, string) {}, true, true},
		{"job row lost, tenant unknown", func(*env, string) {}, false, true},
		{"part moved on", func(e *env, job string) { e.jobRow(job, batch.PartHarvested, 0, "batch_other") }, true, true},
		{"later attempt", func(e *env, job string) { e.jobRow(job, batch.PartPending, 1, "") }, true, true},
		{"awaiting adoption", func(e *env, job string) { e.jobRow(job, batch.PartPending, 0, "") }, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			if tt.tenant {
				if err := e.tables.tenants.Create(ctx, tenant.New("contoso", "Contoso", time.Now())); err != nil {
					t.Fatal(err)
				}
			}
			job := newJobID(t)
			b := e.keyedBatch(job, 0, input(6, batchDep))
			tt.setup(e, job)
			s := e.run()
			if !tt.wantOrphan {
				e.finish(b.ID)
				if s, again := s, e.run(); s.Offpath != 1 || s.Orphans != 0 || again.Offpath != 1 || again.Booked != 0 || len(e.alerts.All()) != 0 {
					t.Errorf("runs %+v, %+v, alerts %v; want offpath's batch, quiet", s, again, e.alerts.Names())
				}
				return
			}
			if s.Orphans != 1 || s.Offpath != 0 || s.Alerted != 1 || s.Errors != 0 {
				t.Fatalf("first run: %+v; want one orphan alerted", s)
			}
			got := e.alerts.Named(audit.AlertOrphan)
			if len(got) != 1 || got[0].Fields["batch_id"] != b.ID || got[0].Fields["offpath_job"] != job || len(e.secondDoor()) != 0 {
				t.Fatalf("alerts %+v; want one %s for %s naming job %s", e.alerts.All(), audit.AlertOrphan, b.ID, job)
			}
			ended := e.finish(b.ID)
			if s := e.run(); s.Booked != 1 || s.Alerted != 0 || s.Errors != 0 {
				t.Fatalf("run after the end: %+v; want booked, not alerted again", s)
			}
			if s := e.run(); s.Booked != 0 || s.Alerted != 0 {
				t.Errorf("third run: %+v; want nothing new", s)
			}
			var want lineUsage
			e.readUsage(ended.OutputFileID, &want)
			e.readUsage(ended.ErrorFileID, &want)
			owner := audit.Unattributed
			if tt.tenant {
				owner = "contoso"
			}
			rows, err := e.tables.ledger.Month(ctx, owner, ledger.MonthOf(epoch))
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || rows[0].Unit != audit.OrphanUnit(b.ID) || rows[0].PromptTokens != want.prompt ||
				rows[0].CompletionTokens != want.completion || rows[0].Requests != want.requests || rows[0].Deployment != batchDep {
				t.Errorf("ledger of %s: %+v; want one row %s with %d/%d tokens, %d requests on %s", owner, rows,
					audit.OrphanUnit(b.ID), want.prompt, want.completion, want.requests, batchDep)
			}
			if n := e.ledger.records[audit.OrphanUnit(b.ID)]; n != 1 {
				t.Errorf("%d ledger writes, want 1", n)
			}
		})
	}
}

// jobRow records the job of the batch keyedBatch made with its part 0 in
// the given status, attempt and batch id.
func (e *env) jobRow(id string, st batch.PartStatus, attempt int, batchID string) {
	e.t.Helper()
	j := batch.Job{ID: id, Tenant: "contoso", Alias: "summarize", State: batch.Held, Created: time.Now().UTC(),
		Parts: []batch.Part{{Index: 0, Deployment: batchDep, Status: st, Attempt: attempt, BatchID: batchID}}}
	if _, err := e.tables.jobs.Create(context.Background(), j, ""); err != nil {
		e.t.Fatal(err)
	}
}
