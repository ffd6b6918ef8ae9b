package audit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/audit"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/tablestore"
)

// A run that cannot list, or cannot read offpath's side, fails and does
// nothing: the timer's next firing starts over.
func TestRun_ListingFailure(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		breakIt func(e *env) func(*audit.Options)
	}{
		{"Batches", func(e *env) func(*audit.Options) {
			fault(e, aoaisim.FaultRule{Route: aoaisim.RouteBatchesList, ErrorRate: 1, ErrorStatus: 500})
			return nil
		}},
		{"Files", func(e *env) func(*audit.Options) {
			fault(e, aoaisim.FaultRule{Route: aoaisim.RouteFilesList, ErrorRate: 1, ErrorStatus: 503})
			return nil
		}},
		{"ServerGone", func(e *env) func(*audit.Options) {
			e.ts.Close()
			return nil
		}},
		{"ActiveJobs", func(*env) func(*audit.Options) {
			return func(o *audit.Options) { o.Active = stubActive{err: errBroken} }
		}},
		{"Records", func(*env) func(*audit.Options) {
			return func(o *audit.Options) { o.Store = stubStore{err: errBroken} }
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.directBatch("direct.jsonl", input(2, batchDep))
			e.upload("stray.jsonl", "{}\n")
			done := newJobID(t)
			e.offpathFile(done, 0, "{}\n")
			if err := e.tables.jobs.MarkActive(context.Background(), "contoso", newJobID(t)); err != nil {
				t.Fatal(err)
			}
			e.later(2 * time.Hour)
			before := len(e.sim.State().Files)
			var mods []func(*audit.Options)
			if m := c.breakIt(e); m != nil {
				mods = append(mods, m)
			}
			s, err := e.auditor(mods...).Run(e.ctx())
			if err == nil {
				t.Fatalf("Run = %+v, nil error; want the listing failure", s)
			}
			if len(e.alerts.All()) != 0 {
				t.Errorf("alerts raised by a run that failed to list: %+v", e.alerts.All())
			}
			if after := len(e.sim.State().Files); after != before {
				t.Errorf("%d files before, %d after a failed run", before, after)
			}
		})
	}
}

func fault(e *env, r aoaisim.FaultRule) {
	e.t.Helper()
	if err := e.sim.SetFaults([]aoaisim.FaultRule{r}); err != nil {
		e.t.Fatal(err)
	}
}

// flakyStore fails the Puts fail selects, as many times as left says.
type flakyStore struct {
	*tablestore.Audit
	mu   sync.Mutex
	left int
	fail func(r audit.Record) bool
}

func (s *flakyStore) Put(ctx context.Context, r audit.Record) error {
	s.mu.Lock()
	boom := s.left > 0 && s.fail(r)
	if boom {
		s.left--
	}
	s.mu.Unlock()
	if boom {
		return errBroken
	}
	return s.Audit.Put(ctx, r)
}

// An alert that was raised but not recorded is raised again next run:
// at least once, never not at all.
func TestRun_AlertNotRecordedAlertsAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	direct := e.directBatch("direct.jsonl", input(2, batchDep))
	stray := e.upload("stray.jsonl", "{}\n")
	e.later(2 * time.Hour)
	e.opts.Store = &flakyStore{Audit: e.tables.audit, left: 2, fail: func(r audit.Record) bool { return r.Deployment == "" }}
	if s := e.run(); s.Alerted != 1 || s.FilesAlerted != 1 || s.Errors != 2 {
		t.Errorf("run with the store failing: %+v", s)
	}
	if s := e.run(); s.Alerted != 1 || s.FilesAlerted != 1 || s.Errors != 0 {
		t.Errorf("next run: %+v; want both alerted again", s)
	}
	if s := e.run(); s.Alerted != 0 || s.FilesAlerted != 0 {
		t.Errorf("third run: %+v; want nothing new", s)
	}
	var batches, files int
	for _, a := range e.secondDoor() {
		switch a.Fields["kind"] {
		case "batch":
			if a.Fields["batch_id"] != direct.ID {
				t.Errorf("alert on %v", a.Fields["batch_id"])
			}
			batches++
		case "file":
			if a.Fields["file_id"] != stray.ID {
				t.Errorf("alert on %v", a.Fields["file_id"])
			}
			files++
		}
	}
	if batches != 2 || files != 2 {
		t.Errorf("%d batch and %d file alerts, want 2 and 2", batches, files)
	}
}

// A booking whose mark was lost is done again next run into the same
// ledger row, even though the input file that named the deployment is gone
// by then.
func TestRun_BookingNotRecordedRewritesSameRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	direct := e.directBatch("direct.jsonl", input(6, batchDep))
	b := e.finish(direct.ID)
	e.opts.Store = &flakyStore{Audit: e.tables.audit, left: 1, fail: func(r audit.Record) bool { return !r.BookedAt.IsZero() }}
	if s := e.run(); s.Alerted != 1 || s.Booked != 0 || s.Errors != 1 {
		t.Errorf("run with the mark failing: %+v", s)
	}
	first := e.unattributed()
	if len(first) != 1 || first[0].Alias != "extract" {
		t.Fatalf("ledger after the first run: %+v", first)
	}
	if _, err := e.direct.Files.Delete(context.Background(), b.InputFileID); err != nil {
		t.Fatal(err)
	}
	if s := e.run(); s.Booked != 1 || s.Alerted != 0 || s.Errors != 0 {
		t.Errorf("next run: %+v; want it booked", s)
	}
	rows := e.unattributed()
	if len(rows) != 1 || rows[0].Usage != first[0].Usage || rows[0].Alias != "extract" || rows[0].Deployment != batchDep {
		t.Errorf("ledger after booking again: %+v\nwant the same single row %+v", rows, first)
	}
	if n := e.ledger.count(audit.LedgerUnit(direct.ID)); n != 2 {
		t.Errorf("%d ledger writes, want 2 (the lost mark made it book again)", n)
	}
	if s := e.run(); s.Booked != 0 {
		t.Errorf("third run booked again: %+v", s)
	}
}
