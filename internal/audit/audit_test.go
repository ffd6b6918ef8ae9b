package audit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/audit"
	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tenant"
)

// A batch created straight on the resource, on its own input file, is one
// alert (never two, never again), and once it ends its usage is booked to
// "unattributed" exactly as the output reports it, once.
func TestRun_DirectBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const lines = 12
	content := input(lines, batchDep)
	direct := e.directBatch("weekly-scoring.jsonl", content)
	e.later(3 * time.Hour) // its input file is old enough to be alerted, were it stray

	s := e.run()
	if s.Batches != 1 || s.Unknown != 1 || s.Offpath != 0 || s.Alerted != 1 || s.Booked != 0 || s.FilesAlerted != 0 || s.Deleted != 0 || s.Errors != 0 {
		t.Errorf("first run: %+v", s)
	}
	got := e.secondDoor()
	if len(got) != 1 {
		t.Fatalf("%d second_door alerts, want 1: %+v", len(got), got)
	}
	f := got[0].Fields
	for k, want := range map[string]any{
		"kind": "batch", "batch_id": direct.ID, "status": "validating", "endpoint": "/chat/completions",
		"input_file_id": direct.InputFileID, "input_bytes": int64(len(content)), "input_filename": "weekly-scoring.jsonl",
		"created_at": epoch.Format(time.RFC3339), "request_total": int64(0),
	} {
		if f[k] != want {
			t.Errorf("alert field %s = %v (%T), want %v", k, f[k], f[k], want)
		}
	}

	if s := e.run(); s.Alerted != 0 || s.Unknown != 1 || s.Booked != 0 {
		t.Errorf("second run, batch still running: %+v", s)
	}
	if n := len(e.secondDoor()); n != 1 {
		t.Errorf("%d alerts after the second run, want still 1", n)
	}
	if rows := e.unattributed(); len(rows) != 0 {
		t.Errorf("usage booked before the batch ended: %+v", rows)
	}

	b := e.finish(direct.ID)
	var want lineUsage
	e.readUsage(b.OutputFileID, &want)
	e.readUsage(b.ErrorFileID, &want)
	if want.lines != lines || want.refusals != 2 || want.prompt == 0 || want.completion == 0 {
		t.Fatalf("the simulator's output: %+v (want %d lines, two refusals, usage)", want, lines)
	}
	if s := e.run(); s.Alerted != 0 || s.Booked != 1 || s.Errors != 0 {
		t.Errorf("run after the batch ended: %+v", s)
	}
	rows := e.unattributed()
	if len(rows) != 1 {
		t.Fatalf("%d unattributed ledger rows, want 1: %+v", len(rows), rows)
	}
	row := rows[0]
	wantEntry := ledger.Entry{Tenant: audit.Unattributed, Month: ledger.MonthOf(epoch), Path: ledger.Batch, Unit: audit.LedgerUnit(direct.ID),
		Alias: "extract", Deployment: batchDep, Usage: ledger.Usage{PromptTokens: want.prompt, CompletionTokens: want.completion,
			CachedTokens: want.cached, Requests: want.requests, Refusals: want.refusals}}
	if err := wantEntry.Estimate(e.catalog); err != nil {
		t.Fatal(err)
	}
	if row.Unit != wantEntry.Unit || row.Alias != wantEntry.Alias || row.Deployment != wantEntry.Deployment || row.Path != ledger.Batch || row.Usage != wantEntry.Usage {
		t.Errorf("ledger row:\n got %+v\nwant %+v", row, wantEntry)
	}
	if row.Cost == 0 {
		t.Errorf("ledger row has no cost")
	}
	rec, ok := e.record(audit.KindBatch, direct.ID)
	if !ok || rec.BookedAt.IsZero() || rec.Usage != row.Usage || rec.Note != "" || rec.OutputFileID != b.OutputFileID {
		t.Errorf("audit record after booking: %+v, %v", rec, ok)
	}
	tn, err := e.tables.tenants.Get(context.Background(), audit.Unattributed)
	if err != nil {
		t.Fatalf("tenant %s: %v", audit.Unattributed, err)
	}
	if tn.State != tenant.Suspended || len(tn.Keys) != 0 || len(tn.AppIDs) != 0 || len(tn.Aliases) != 0 {
		t.Errorf("tenant %s can be used: %+v", audit.Unattributed, tn)
	}

	code, rep := e.usageReport()
	if code != 200 || rep.Tenant != audit.Unattributed || rep.Total.PromptTokens != want.prompt || rep.Total.Requests != want.requests ||
		len(rep.Lines) != 1 || rep.Lines[0].Alias != "extract" || rep.Lines[0].Path != ledger.Batch {
		t.Errorf("the admin's usage report: HTTP %d %+v", code, rep)
	}

	e.later(2 * time.Hour)
	if s := e.run(); s.Alerted != 0 || s.Booked != 0 || s.FilesAlerted != 0 || s.Unknown != 1 {
		t.Errorf("run after booking: %+v", s)
	}
	again := e.unattributed()
	if len(again) != 1 || again[0].Usage != row.Usage || !again[0].Recorded.Equal(row.Recorded) {
		t.Errorf("the ledger changed on a later run:\n got %+v\nwant %+v", again, rows)
	}
	if n := e.ledger.count(audit.LedgerUnit(direct.ID)); n != 1 {
		t.Errorf("the batch was booked %d times, want once", n)
	}
	if n := len(e.secondDoor()); n != 1 {
		t.Errorf("%d alerts in all, want 1", n)
	}
	e.noSecrets(want.texts)
	if !strings.Contains(e.logs.String(), `"event":"batch_audit"`) {
		t.Errorf("no batch_audit log line")
	}
}

// A batch that ended before the audit first saw it is alerted and booked
// in the same run.
func TestRun_DirectBatchEndedBeforeFirstRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	direct := e.directBatch("input.jsonl", input(5, batchDep))
	b := e.finish(direct.ID)
	s := e.run()
	if s.Alerted != 1 || s.Booked != 1 || s.Errors != 0 {
		t.Errorf("run: %+v", s)
	}
	got := e.secondDoor()
	if len(got) != 1 || got[0].Fields["status"] != "completed" || got[0].Fields["output_file_id"] != b.OutputFileID ||
		got[0].Fields["request_total"] != int64(5) || got[0].Fields["request_completed"] != b.RequestCounts.Completed {
		t.Errorf("alerts: %+v", got)
	}
	var want lineUsage
	e.readUsage(b.OutputFileID, &want)
	e.readUsage(b.ErrorFileID, &want)
	rows := e.unattributed()
	if len(rows) != 1 || rows[0].PromptTokens != want.prompt || rows[0].CompletionTokens != want.completion || rows[0].Requests != 5 {
		t.Errorf("ledger %+v, want usage %+v", rows, want)
	}
}

// A batch on a deployment the catalog does not know is booked under that
// deployment and alias "unknown", at no cost, with a warning.
func TestRun_UnknownDeployment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	direct := e.directBatch("rogue.jsonl", input(4, rogueDep))
	e.finish(direct.ID)
	if s := e.run(); s.Alerted != 1 || s.Booked != 1 {
		t.Errorf("run: %+v", s)
	}
	rows := e.unattributed()
	if len(rows) != 1 || rows[0].Alias != audit.Unknown || rows[0].Deployment != rogueDep || rows[0].Cost != 0 || rows[0].Requests != 4 {
		t.Fatalf("ledger: %+v", rows)
	}
	rec, _ := e.record(audit.KindBatch, direct.ID)
	if !strings.Contains(rec.Note, "not in the catalog") {
		t.Errorf("record note %q does not say the deployment is unknown", rec.Note)
	}
	if !strings.Contains(e.logs.String(), `"level":"warn"`) {
		t.Errorf("no warning logged for an unknown deployment")
	}
}

// What Azure no longer has is noted and booked as far as it goes, once.
func TestRun_FilesGone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		delete    func(b batch.AzureBatch) []string
		wantNote  string
		wantAlias string
		wantRows  int
	}{
		{"Output", func(b batch.AzureBatch) []string { return []string{b.OutputFileID, b.ErrorFileID} }, "output file", "", 0},
		{"Input", func(b batch.AzureBatch) []string { return []string{b.InputFileID} }, "input file", audit.Unknown, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			direct := e.directBatch("gone.jsonl", input(3, batchDep))
			b := e.finish(direct.ID)
			for _, id := range c.delete(b) {
				if _, err := e.direct.Files.Delete(context.Background(), id); err != nil {
					t.Fatal(err)
				}
			}
			if s := e.run(); s.Alerted != 1 || s.Booked != 1 || s.Errors != 0 {
				t.Errorf("run: %+v", s)
			}
			rec, ok := e.record(audit.KindBatch, direct.ID)
			if !ok || rec.BookedAt.IsZero() || !strings.Contains(rec.Note, c.wantNote) || !strings.Contains(rec.Note, "gone") {
				t.Errorf("record %+v: want booked with a note on the %s", rec, c.wantNote)
			}
			rows := e.unattributed()
			if len(rows) != c.wantRows || (len(rows) == 1 && (rows[0].Alias != c.wantAlias || rows[0].Deployment != audit.Unknown || rows[0].Cost != 0)) {
				t.Errorf("ledger: %+v", rows)
			}
			if !strings.Contains(e.logs.String(), "gone") {
				t.Errorf("no warning about the missing file")
			}
			if s := e.run(); s.Booked != 0 || s.Alerted != 0 {
				t.Errorf("second run booked or alerted again: %+v", s)
			}
		})
	}
}

// A batch that failed validation ran nothing: it is alerted and marked
// booked, with no ledger row.
func TestRun_FailedBatchBooksNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	direct := e.directBatch("bad.jsonl", input(2, "no-such-deployment"))
	b := e.finish(direct.ID)
	if b.Status != batch.AzureFailed {
		t.Fatalf("batch %s, want failed", b.Status)
	}
	if s := e.run(); s.Alerted != 1 || s.Booked != 1 {
		t.Errorf("run: %+v", s)
	}
	if rows := e.unattributed(); len(rows) != 0 {
		t.Errorf("ledger: %+v", rows)
	}
}

// A file nobody's batch uses is alerted once, when it is older than MinAge.
// offpath's inputs are not alerted.
func TestRun_StrayFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	active := newJobID(t)
	if err := e.tables.jobs.MarkActive(context.Background(), "contoso", active); err != nil {
		t.Fatal(err)
	}
	e.offpathFile(active, 0, input(1, batchDep))
	stray := e.upload("notes.jsonl", "not even json\n")
	if s := e.run(); s.FilesAlerted != 0 || s.Files != 2 {
		t.Errorf("run with a young stray file: %+v", s)
	}
	e.later(time.Hour)
	if s := e.run(); s.FilesAlerted != 1 || s.Alerted != 0 || s.Deleted != 0 {
		t.Errorf("run: %+v", s)
	}
	got := e.secondDoor()
	if len(got) != 1 {
		t.Fatalf("alerts: %+v", got)
	}
	for k, want := range map[string]any{"kind": "file", "file_id": stray.ID, "filename": "notes.jsonl", "purpose": "batch",
		"bytes": int64(len("not even json\n")), "created_at": epoch.Format(time.RFC3339)} {
		if got[0].Fields[k] != want {
			t.Errorf("alert field %s = %v, want %v", k, got[0].Fields[k], want)
		}
	}
	if s := e.run(); s.FilesAlerted != 0 {
		t.Errorf("third run alerted again: %+v", s)
	}
	if !e.files()[stray.ID] {
		t.Errorf("the stray file was deleted; it is evidence")
	}
}

// offpath's batches are offpath's: no alert, whatever their state.
func TestRun_OffpathBatchNotAlerted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	job := newJobID(t)
	if err := e.tables.jobs.MarkActive(context.Background(), "contoso", job); err != nil {
		t.Fatal(err)
	}
	b := e.offpathBatch(job, 0, input(3, batchDep))
	e.later(2 * time.Hour)
	if s := e.run(); s.Offpath != 1 || s.Unknown != 0 || s.Alerted != 0 || s.FilesAlerted != 0 {
		t.Errorf("run on a running batch: %+v", s)
	}
	e.finish(b.ID)
	if s := e.run(); s.Offpath != 1 || s.Unknown != 0 || s.Alerted != 0 || s.FilesAlerted != 0 || s.Deleted != 0 || s.Booked != 0 {
		t.Errorf("run on an ended batch of an active job: %+v", s)
	}
	if n := len(e.secondDoor()); n != 0 {
		t.Errorf("%d alerts, want none", n)
	}
	if rows := e.unattributed(); len(rows) != 0 {
		t.Errorf("offpath's batch booked as unattributed: %+v", rows)
	}
}

func TestNew_RequiresDependencies(t *testing.T) {
	t.Parallel()
	full := audit.Options{Azure: &azopenai.BatchClient{}, Active: stubActive{}, Jobs: stubJobs{}, Store: stubStore{}, Ledger: stubLedger{}, Tenants: stubTenants{}, Catalog: &catalog.Catalog{}}
	if _, err := audit.New(full); err != nil {
		t.Fatalf("New(all set) = %v", err)
	}
	for _, c := range []struct {
		name  string
		unset func(o *audit.Options)
	}{
		{"Azure", func(o *audit.Options) { o.Azure = nil }},
		{"Active", func(o *audit.Options) { o.Active = nil }},
		{"Jobs", func(o *audit.Options) { o.Jobs = nil }},
		{"Store", func(o *audit.Options) { o.Store = nil }},
		{"Ledger", func(o *audit.Options) { o.Ledger = nil }},
		{"Tenants", func(o *audit.Options) { o.Tenants = nil }},
		{"Catalog", func(o *audit.Options) { o.Catalog = nil }},
	} {
		o := full
		c.unset(&o)
		if _, err := audit.New(o); err == nil {
			t.Errorf("New without %s = nil error", c.name)
		}
	}
}

// Stubs for dependencies a test wants to fail.
type (
	stubActive  struct{ err error }
	stubJobs    struct{}
	stubStore   struct{ err error }
	stubLedger  struct{}
	stubTenants struct{}
)

func (s stubActive) ListActive(context.Context) ([]batch.ActiveRef, error) { return nil, s.err }
func (stubJobs) Get(context.Context, string, string) (batch.Job, error) {
	return batch.Job{}, batch.ErrNotFound
}
func (stubJobs) Owners(context.Context, []string) (map[string]string, error) { return nil, nil }
func (s stubStore) Load(context.Context, audit.Kind) (map[string]audit.Record, error) {
	return nil, s.err
}
func (s stubStore) Put(context.Context, audit.Record) error   { return s.err }
func (stubLedger) Record(context.Context, ledger.Entry) error { return nil }
func (stubTenants) Get(context.Context, string) (tenant.Tenant, error) {
	return tenant.Tenant{}, tenant.ErrNotFound
}
func (stubTenants) Create(context.Context, tenant.Tenant) error { return nil }

var errBroken = errors.New("storage is down")
