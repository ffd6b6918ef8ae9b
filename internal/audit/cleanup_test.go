package audit_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/aoaisim"
)

// offpath's leftovers go; everything an active job, a running batch or a
// batch offpath did not create might still need stays, and so does every
// young file.
func TestRun_Leftovers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	active, done, ended, running, mimic := newJobID(t), newJobID(t), newJobID(t), newJobID(t), newJobID(t)
	if err := e.tables.jobs.MarkActive(ctx, "contoso", active); err != nil {
		t.Fatal(err)
	}
	activeFile := e.offpathFile(active, 0, input(2, batchDep))         // held job, uploaded: kept
	activeBatch := e.offpathBatch(active, 1, input(2, batchDep))       // ended, not yet harvested: kept
	doneFile := e.offpathFile(done, 0, input(2, batchDep))             // harvested job's input: deleted
	endedBatch := e.offpathBatch(ended, 0, input(2, batchDep))         // ended batch of a finished job: all its files deleted
	runningBatch := e.offpathBatch(running, 0, input(3, slowDep))      // running, whatever its job: kept
	foreign := e.directBatch(mimic+".part0.jsonl", input(2, batchDep)) // named like offpath's, used by an unknown batch: kept
	activeEnded, endedEnded, foreignEnded := e.finish(activeBatch.ID), e.finish(endedBatch.ID), e.finish(foreign.ID)
	e.clock.Advance(2 * time.Hour)
	young := e.offpathFile(done, 1, input(1, batchDep)) // a harvested job's, but just uploaded: kept for now
	if b, err := e.azure.GetBatch(ctx, runningBatch.ID); err != nil || b.Status.Terminal() {
		t.Fatalf("the slow batch: %v, %v; want it running", b.Status, err)
	}

	before := e.files()
	wantGone := ids(doneFile.ID, endedEnded.InputFileID, endedEnded.OutputFileID, endedEnded.ErrorFileID)
	s := e.run()
	if s.Deleted != len(wantGone) || s.Errors != 0 || s.Offpath != 3 || s.Unknown != 1 || s.Alerted != 1 || s.FilesAlerted != 0 {
		t.Errorf("run: %+v; want %d deleted, 3 offpath batches, 1 unknown", s, len(wantGone))
	}
	after := e.files()
	for id := range before {
		if after[id] == wantGone[id] {
			t.Errorf("file %s: present %v, want deleted %v", id, after[id], wantGone[id])
		}
	}
	for _, id := range []string{activeFile.ID, activeEnded.InputFileID, activeEnded.OutputFileID, runningBatch.InputFileID,
		foreignEnded.InputFileID, foreignEnded.OutputFileID, young.ID} {
		if !after[id] {
			t.Errorf("file %s was deleted; it must be kept", id)
		}
	}
	if got := e.secondDoor(); len(got) != 1 || got[0].Fields["batch_id"] != foreign.ID {
		t.Errorf("alerts: %+v; want only the unknown batch", got)
	}

	if s := e.run(); s.Deleted != 0 || s.Errors != 0 {
		t.Errorf("second run: %+v; nothing left to delete", s)
	}

	// The active job is harvested, and the young file ages.
	if err := e.tables.jobs.Unmark(ctx, active); err != nil {
		t.Fatal(err)
	}
	if err := e.tables.jobs.MarkActive(ctx, "fabrikam", newJobID(t)); err != nil { // the index is in use
		t.Fatal(err)
	}
	e.later(time.Hour)
	wantGone = ids(activeFile.ID, activeEnded.InputFileID, activeEnded.OutputFileID, activeEnded.ErrorFileID, young.ID)
	if s := e.run(); s.Deleted != len(wantGone) {
		t.Errorf("run after the job was harvested: %+v; want its files and the aged file deleted (%d)", s, len(wantGone))
	}
	left := e.files()
	for id := range wantGone {
		if left[id] {
			t.Errorf("file %s still there", id)
		}
	}
	if !left[runningBatch.InputFileID] || !left[foreignEnded.InputFileID] {
		t.Errorf("a running batch's or an unknown batch's file was deleted")
	}
}

func ids(list ...string) map[string]bool {
	out := map[string]bool{}
	for _, id := range list {
		if id != "" {
			out[id] = true
		}
	}
	return out
}

// offpath's batches are running but no job is active: the index was read
// from the wrong place, and nothing may be deleted on its word.
func TestRun_EmptyActiveIndexDeletesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	running, done := newJobID(t), newJobID(t)
	e.offpathBatch(running, 0, input(3, slowDep))
	leftover := e.offpathFile(done, 0, input(1, batchDep))
	e.clock.Advance(2 * time.Hour)
	if s := e.run(); s.Deleted != 0 {
		t.Errorf("run with an empty active index: %+v; want nothing deleted", s)
	}
	if !strings.Contains(e.logs.String(), "active-job index looks wrong") {
		t.Errorf("no warning about the active index")
	}
	if err := e.tables.jobs.MarkActive(context.Background(), "contoso", running); err != nil {
		t.Fatal(err)
	}
	if s := e.run(); s.Deleted != 1 || e.files()[leftover.ID] {
		t.Errorf("run with the index: %+v; want the leftover deleted", s)
	}
}

// A delete that fails is counted and logged, the run goes on, and the
// next run deletes the file.
func TestRun_DeleteFailureRetriedNextRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if err := e.tables.jobs.MarkActive(ctx, "contoso", newJobID(t)); err != nil {
		t.Fatal(err)
	}
	done := newJobID(t)
	a, b := e.offpathFile(done, 0, "{}\n"), e.offpathFile(done, 1, "{}\n")
	stray := e.upload("stray.jsonl", "{}\n")
	e.later(2 * time.Hour)
	if err := e.sim.SetFaults([]aoaisim.FaultRule{{Route: aoaisim.RouteFilesDelete, ErrorRate: 1, ErrorStatus: 503}}); err != nil {
		t.Fatal(err)
	}
	s := e.run()
	if s.Deleted != 0 || s.Errors != 2 || s.FilesAlerted != 1 {
		t.Errorf("run with deletes failing: %+v; want 2 errors, the stray file still alerted", s)
	}
	if err := e.sim.SetFaults(nil); err != nil {
		t.Fatal(err)
	}
	if s := e.run(); s.Deleted != 2 || s.Errors != 0 || s.FilesAlerted != 0 {
		t.Errorf("next run: %+v; want both deleted", s)
	}
	left := e.files()
	if left[a.ID] || left[b.ID] || !left[stray.ID] {
		t.Errorf("files left: %v", keys(left))
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Only files named exactly as offpath names its inputs, with purpose
// "batch", are offpath's.
func TestRun_OffpathNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.tables.jobs.MarkActive(context.Background(), "contoso", newJobID(t)); err != nil {
		t.Fatal(err)
	}
	job := newJobID(t)
	ours := e.offpathFile(job, 12, "{}\n")
	names := []string{
		"0123456789abcdw.part0.jsonl", // 'w' is outside the id alphabet
		job + ".part.jsonl",
		job + ".part01.jsonl",
		job + ".part-1.jsonl",
		job + ".part0.json",
		job + "x.part0.jsonl",
		"prefix-" + job + ".part0.jsonl",
	}
	for _, n := range names {
		e.upload(n, "{}\n")
	}
	e.later(2 * time.Hour)
	s := e.run()
	if s.Deleted != 1 || s.FilesAlerted != len(names) {
		t.Errorf("run: %+v; want offpath's one file deleted and the %d others alerted", s, len(names))
	}
	if e.files()[ours.ID] {
		t.Errorf("offpath's leftover %s kept", ours.Filename)
	}
	var alerted []string
	for _, a := range e.secondDoor() {
		alerted = append(alerted, a.Fields["filename"].(string))
	}
	sort.Strings(alerted)
	sort.Strings(names)
	if strings.Join(alerted, ",") != strings.Join(names, ",") {
		t.Errorf("alerted %v, want %v", alerted, names)
	}
}
