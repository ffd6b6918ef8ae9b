package ingest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/local/aoaisim"
)

// TestReprocess: a dead-lettered document is written again as a new
// version, its status queued at once; the enqueue then sends its claim
// check like any upload's and it ends done, the failed attempt's ledger
// row kept. Only dead-lettered documents are reprocessed; one whose blob
// changed since is not.
func TestReprocess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, fixtureOptions{
		sim:    func(c *aoaisim.Config) { c.Faults = []aoaisim.FaultRule{{Route: "chat", ErrorRate: 1}} },
		llm:    func(c *azopenai.QueueConfig) { c.MaxAttempts = 1 },
		ingest: func(o *ingest.Options) { o.MaxDeliveryCount = map[string]int{"doc-ingest": 1} },
	})
	const name = "acme/kb/a.txt"
	if _, err := f.enq.Reprocess(ctx, "acme", name); !errors.Is(err, document.ErrNotFound) {
		t.Errorf("Reprocess(unknown) = %v, want ErrNotFound", err)
	}
	claim := f.drop(t, name, prose(3000))
	if _, err := f.enq.Reprocess(ctx, "acme", name); !errors.Is(err, document.ErrNotDeadLettered) {
		t.Errorf("Reprocess(queued) = %v, want ErrNotDeadLettered", err)
	}
	if _, err := f.deliver(claim.Body, 1); err == nil {
		t.Fatal("the delivery succeeded against a failing chat deployment")
	}
	dead, _ := f.statuses.Get(ctx, "acme", name)
	if dead.State != document.DeadLettered {
		t.Fatalf("status %+v, want dead_lettered", dead)
	}
	failed := len(f.ledger.entries())

	st, err := f.enq.Reprocess(ctx, "acme", name)
	if err != nil || st.State != document.Queued || st.SameVersion(dead.ETag) || !strings.Contains(st.Reason, dead.ETag) {
		t.Fatalf("Reprocess = %+v, %v; want queued for a new version", st, err)
	}
	if _, err := f.enq.Reprocess(ctx, "acme", name); !errors.Is(err, document.ErrNotDeadLettered) {
		t.Errorf("a second Reprocess = %v, want ErrNotDeadLettered", err)
	}
	if err := f.sim.SetFaults(nil); err != nil {
		t.Fatal(err)
	}
	again, err := f.enq.Enqueue(ctx, name, false) // the blob trigger, for the new version
	if err != nil || again.Message.ETag != st.ETag {
		t.Fatalf("Enqueue after Reprocess = %+v, %v; want a claim check for %s", again.Message, err, st.ETag)
	}
	if done, err := f.deliver(again.Body, 1); err != nil || done.State != document.Done {
		t.Fatalf("after reprocess: %+v, %v", done, err)
	}
	if n := len(f.ledger.entries()); n != failed+2 || failed == 0 {
		t.Errorf("ledger has %d rows, %d of the failed attempt: want those kept and two more", n, failed)
	}

	// A version replaced since it was dead-lettered is not written back.
	if err := f.sim.SetFaults([]aoaisim.FaultRule{{Route: "chat", ErrorRate: 1}}); err != nil {
		t.Fatal(err)
	}
	b := f.drop(t, "acme/kb/b.txt", prose(2000))
	_, _ = f.deliver(b.Body, 1)
	f.blobs.put("acme/kb/b.txt", prose(2100))
	if _, err := f.enq.Reprocess(ctx, "acme", "acme/kb/b.txt"); !errors.Is(err, document.ErrChanged) {
		t.Errorf("Reprocess(replaced) = %v, want ErrDocumentChanged", err)
	}
}
