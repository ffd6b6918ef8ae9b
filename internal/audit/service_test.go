package audit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/poll"
)

// offpath's own job, run by the batch service from submission to harvest
// with the audit running between every poll tick on a clock two hours
// ahead (so that no file is protected by its age): nothing is alerted,
// nothing the job still needs is deleted, and the harvest finds all its
// output.
func TestRun_OffpathJobThroughTheService(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bc, err := azblob.NewClientFromConnectionString(shared.Get(t).ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := azurite.Suffix()
	svc, err := batch.New(batch.Options{
		Jobs: e.tables.jobs, Blobs: blobstore.New(bc, blobstore.Options{}), Azure: e.azure, Ledger: e.tables.ledger,
		Budgets: ledger.NewBudgets(e.tables.ledger), Catalog: e.catalog, Alerts: e.alerts,
		Containers:   batch.Containers{Inputs: "ain" + n, Results: "ares" + n, Uploads: "aup" + n},
		PollInterval: time.Nanosecond, LeaseTTL: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	tn := tenant.New("contoso", "Contoso", time.Now())
	tn.Aliases = []string{"summarize"}
	items := make([]batch.Item, 8)
	for i := range items {
		items[i] = batch.Item{ID: fmt.Sprintf("ticket-%d", i), Prompt: fmt.Sprintf("%s: ticket %d is about the printer", secret, i)}
	}
	ctx := e.ctx()
	job, _, err := svc.Submit(ctx, tn, batch.Request{Alias: "summarize", SystemPrompt: "Summarise.", MaxTokens: 32, Items: items})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	e.later(2 * time.Hour)

	runs := 0
	var j batch.Job
	if !poll.Within(30*time.Second, func() bool {
		s := e.run()
		runs++
		if s.Unknown != 0 || s.Alerted != 0 || s.FilesAlerted != 0 || s.Deleted != 0 || s.Errors != 0 {
			t.Fatalf("audit run %d during the job: %+v", runs, s)
		}
		if _, err := svc.Poll(ctx); err != nil {
			t.Fatalf("Poll: %v", err)
		}
		if j, err = e.tables.jobs.Get(ctx, tn.ID, job.ID); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(30 * time.Second) // the next ask sees the job 30 s on
		return j.State == batch.Harvested
	}) {
		t.Fatalf("job still %s after %d audit runs", j.State, runs)
	}
	if c := j.Counts(); c.OK != int64(len(items)) {
		t.Errorf("harvested counts %+v, want all %d ok", c, len(items))
	}
	if runs < 4 {
		t.Errorf("only %d audit runs during the job", runs)
	}
	if got := e.alerts.All(); len(got) != 0 {
		t.Errorf("alerts: %+v", got)
	}
	s := e.run()
	if s.Offpath != 1 || s.Unknown != 0 || s.Deleted != 0 || s.Errors != 0 {
		t.Errorf("audit after the harvest: %+v", s)
	}
	if left := e.files(); len(left) != 0 {
		t.Errorf("files left after the harvest: %v", keys(left))
	}
	e.noSecrets(nil)
}
