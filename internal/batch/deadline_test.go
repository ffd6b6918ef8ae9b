package batch_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/clocktest"
	"github.com/offpath/offpath/internal/tokenmetrics"
)

const syncDep = "gpt-4o-mini"

// deadlineEnv is an env whose simulator also serves the alias's
// synchronous deployment, with the fallback's client wired to it, and a
// service clock the test moves.
func deadlineEnv(t *testing.T, speed, linesPerMinute float64, faults ...aoaisim.FaultRule) (*env, *clocktest.Ahead) {
	t.Helper()
	clock := &clocktest.Ahead{}
	sim := simConfig(speed,
		aoaisim.Deployment{Name: batchDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeGlobalBatch, BatchLinesPerMinute: linesPerMinute},
		aoaisim.Deployment{Name: syncDep, Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: aoaisim.TypeStandard})
	var e *env
	e = newEnv(t, envConfig{sim: sim, tweak: func(o *batch.Options) {
		o.Now = clock.Now
		o.FallbackConcurrency = 3
	}})
	client, err := azopenai.NewQueueClient(azopenai.QueueConfig{Endpoint: e.simURL, APIKey: aoaisim.DefaultKey, AllowHTTP: true}, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	e.opts.Sync = client
	e.svc = e.service()
	if err := e.sim.SetFaults(faults); err != nil {
		t.Fatal(err)
	}
	return e, clock
}

// checkSources verifies that every item of j has exactly one result, that
// the lines the batch answered are the batch's and the rest the
// fallback's, and that the ledger has one row per source unit with the
// catalog's price of its path. It returns the items answered by each.
func (e *env) checkSources(j batch.Job) (fromBatch, fromSync int) {
	e.t.Helper()
	if j.State != batch.Harvested {
		e.t.Fatalf("job %s is %s, want harvested", j.ID, j.State)
	}
	res := e.results(j)
	if len(res) != j.Items {
		e.t.Errorf("%d result lines, want %d", len(res), j.Items)
	}
	seen := map[string]bool{}
	var syncUsage, batchUsage ledger.Usage
	for _, l := range res {
		if seen[l.ItemID] {
			e.t.Errorf("item %s has two results", l.ItemID)
		}
		seen[l.ItemID] = true
		if l.Outcome != batch.OK {
			e.t.Errorf("item %s: %s %+v, want ok", l.ItemID, l.Outcome, l.Error)
		}
		u := &batchUsage
		if l.Source == batch.SourceSync {
			fromSync++
			u = &syncUsage
		} else {
			fromBatch++
		}
		if l.Usage != nil {
			u.PromptTokens += l.Usage.PromptTokens
			u.CompletionTokens += l.Usage.CompletionTokens
		}
	}
	c := j.Counts()
	if c.Total() != int64(j.Items) || c.OK != int64(j.Items) {
		e.t.Errorf("counts %+v for %d items", c, j.Items)
	}
	entries, err := e.ledger.Month(context.Background(), j.Tenant, j.Month())
	if err != nil {
		e.t.Fatal(err)
	}
	var lb, ls ledger.Usage
	syncRows := 0
	price := func(path ledger.Path, dep string) int64 {
		p, err := e.catalog.Price(j.Alias, path, dep)
		if err != nil {
			e.t.Fatal(err)
		}
		return int64(p.Cost(1_000_000, 0, 1_000_000))
	}
	for _, en := range entries {
		if !strings.HasPrefix(en.Unit, "batch:"+j.ID+"/") {
			continue
		}
		if e.ledger.records[en.Unit] == 0 {
			e.t.Errorf("ledger row %s was never recorded by this run", en.Unit)
		}
		switch {
		case strings.Contains(en.Unit, "/sync-"):
			syncRows++
			ls.Add(en.Usage)
			if en.Path != ledger.Queue || en.Deployment != syncDep {
				e.t.Errorf("fallback row %s: path %s deployment %s, want queue %s", en.Unit, en.Path, en.Deployment, syncDep)
			}
			want, _ := e.catalog.Price(j.Alias, ledger.Queue, syncDep)
			if got := want.Cost(en.PromptTokens, en.CachedTokens, en.CompletionTokens); en.Cost != got || en.Cost == 0 {
				e.t.Errorf("fallback row %s costs %v, want %v at the synchronous price", en.Unit, en.Cost, got)
			}
		default:
			lb.Add(en.Usage)
			if en.Path != ledger.Batch || en.Deployment != batchDep {
				e.t.Errorf("batch row %s: path %s deployment %s", en.Unit, en.Path, en.Deployment)
			}
			want, _ := e.catalog.Price(j.Alias, ledger.Batch, batchDep)
			if got := want.Cost(en.PromptTokens, en.CachedTokens, en.CompletionTokens); en.Cost != got {
				e.t.Errorf("batch row %s costs %v, want %v at the batch price", en.Unit, en.Cost, got)
			}
		}
	}
	if price(ledger.Queue, syncDep) <= price(ledger.Batch, batchDep) {
		e.t.Errorf("the catalog's synchronous price is not above the batch price: the test proves nothing")
	}
	if syncRows != fromSync {
		e.t.Errorf("%d fallback ledger rows, %d items from the fallback", syncRows, fromSync)
	}
	if ls.PromptTokens != syncUsage.PromptTokens || ls.CompletionTokens != syncUsage.CompletionTokens {
		e.t.Errorf("fallback ledger %d/%d tokens, results %d/%d", ls.PromptTokens, ls.CompletionTokens, syncUsage.PromptTokens, syncUsage.CompletionTokens)
	}
	if lb.PromptTokens != batchUsage.PromptTokens || lb.CompletionTokens != batchUsage.CompletionTokens {
		e.t.Errorf("batch ledger %d/%d tokens, results %d/%d", lb.PromptTokens, lb.CompletionTokens, batchUsage.PromptTokens, batchUsage.CompletionTokens)
	}
	if u := j.Usage(); u.PromptTokens != batchUsage.PromptTokens+syncUsage.PromptTokens {
		e.t.Errorf("job usage %d prompt tokens, results %d", u.PromptTokens, batchUsage.PromptTokens+syncUsage.PromptTokens)
	}
	return fromBatch, fromSync
}

// A job whose batch Azure keeps validating falls back when the rule says
// it can no longer finish: cancelled at Azure, every item answered once
// by the synchronous deployment, billed at its price.
func TestDeadline_ValidatingFallsBack(t *testing.T) {
	t.Parallel()
	e, clock := deadlineEnv(t, 600, 0, aoaisim.FaultRule{Deployment: batchDep, HoldValidating: aoaisim.Duration(48 * time.Hour)})
	prom := tokenmetrics.NewPrometheus(tokenmetrics.PrometheusOptions{})
	e.opts.Decisions = prom
	e.svc = e.service()
	due := clock.Now().Add(2 * time.Hour)
	j := e.submit("contoso", items(7, "v"), func(r *batch.Request) { r.CompleteBy = due })
	if !j.CompleteBy.Equal(due.UTC()) {
		t.Fatalf("complete_by %v, want %v", j.CompleteBy, due)
	}
	got := e.pollUntil(30*time.Second, func(j batch.Job) bool { return j.Parts[0].AzureStatus == "validating" }, j.ID)[j.ID]
	if got.Parts[0].Fallback != nil {
		t.Fatalf("fallback started two hours before the deadline: %+v", got.Parts[0].Fallback)
	}
	// Margin: 15 min to cancel and harvest, 7 lines at 60 a minute; the
	// part must have started by 30 min before that.
	// (The service's clock is real time moved ahead: a minute early leaves
	// the test that long to look.)
	clock.Advance(2*time.Hour - 15*time.Minute - 7*time.Second - 30*time.Minute - time.Minute)
	e.pollUntil(10*time.Second, func(j batch.Job) bool { return j.Parts[0].AzureStatus == "validating" }, j.ID)
	if f := e.get(j.ID).Parts[0].Fallback; f != nil {
		t.Fatalf("fallback started a minute early: %+v", f)
	}
	clock.Advance(time.Minute)
	done := e.pollUntil(30*time.Second, harvested, j.ID)[j.ID]
	p := done.Parts[0]
	if p.Fallback == nil || p.Fallback.Reason != batch.RiskValidating || p.Fallback.Items != 7 || p.Fallback.Done != 7 || p.Fallback.FinishedAt.IsZero() {
		t.Fatalf("fallback %+v", p.Fallback)
	}
	if p.AzureStatus != "cancelled" || done.Final != batch.Completed {
		t.Errorf("part ended %s, job final %s; want cancelled at Azure, completed", p.AzureStatus, done.Final)
	}
	fromBatch, fromSync := e.checkSources(done)
	if fromBatch != 0 || fromSync != 7 {
		t.Errorf("%d items from the batch, %d from the fallback; want 0 and 7", fromBatch, fromSync)
	}
	if n := e.sim.Stats().Routes[aoaisim.RouteChat]; n != 7 {
		t.Errorf("%d synchronous requests for 7 items", n)
	}
	if n := e.alerts.Count(batch.AlertDeadlineFallback); n != 1 {
		t.Errorf("%d deadline_fallback alerts, want 1", n)
	}
	scrape := httptest.NewRecorder()
	prom.ServeHTTP(scrape, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if want := `offpath_batch_fallbacks_total{alias="` + j.Alias + `",reason="validating"} 1` + "\n"; !strings.Contains(scrape.Body.String(), want) {
		t.Errorf("metrics lack %q:\n%s", want, scrape.Body)
	}
}

// A part cancelled for its deadline while Azure runs it: the lines Azure
// ran come from its output (batch price), the rest from the fallback
// (synchronous price), each item once.
func TestDeadline_CancelledMidRunCombinesSources(t *testing.T) {
	t.Parallel()
	// 60 × 10 lines a simulated minute: 10 lines a second.
	e, clock := deadlineEnv(t, 60, 10)
	due := clock.Now().Add(2 * time.Hour)
	j := e.submit("contoso", items(60, "m"), func(r *batch.Request) { r.CompleteBy = due })
	e.pollUntil(60*time.Second, func(j batch.Job) bool { return j.Parts[0].RequestCounts.Completed >= 5 }, j.ID)
	// The last moment: 15 min + 60 lines at 60 a minute before the deadline.
	clock.Advance(2*time.Hour - 15*time.Minute - 60*time.Second)
	done := e.pollUntil(60*time.Second, harvested, j.ID)[j.ID]
	p := done.Parts[0]
	if p.Fallback == nil || p.Fallback.Reason != batch.RiskLate {
		t.Fatalf("fallback %+v", p.Fallback)
	}
	fromBatch, fromSync := e.checkSources(done)
	t.Logf("%d items from the batch, %d from the fallback; %v from the deadline risk to the last fallback item",
		fromBatch, fromSync, p.Fallback.FinishedAt.Sub(p.Fallback.StartedAt).Round(time.Millisecond))
	if fromBatch < 5 || fromSync == 0 || int64(fromBatch) != p.Fallback.FromBatch || fromSync != p.Fallback.Items {
		t.Errorf("%d from the batch, %d from the fallback; fallback says %+v", fromBatch, fromSync, p.Fallback)
	}
	if n := e.sim.Stats().Routes[aoaisim.RouteChat]; n != int64(fromSync) {
		t.Errorf("%d synchronous requests for %d items", n, fromSync)
	}
}

// A fallback that crashes after booking an item resumes where its last
// checkpoint was: the kept answers are not asked again, their ledger rows
// are rewritten, not added.
func TestDeadline_FallbackResumesAfterCrash(t *testing.T) {
	t.Parallel()
	e, clock := deadlineEnv(t, 600, 0, aoaisim.FaultRule{Deployment: batchDep, HoldValidating: aoaisim.Duration(48 * time.Hour)})
	due := clock.Now().Add(2 * time.Hour)
	j := e.submit("contoso", items(10, "c"), func(r *batch.Request) { r.CompleteBy = due })
	e.pollUntil(30*time.Second, func(j batch.Job) bool { return j.Parts[0].AzureStatus == "validating" }, j.ID)
	clock.Advance(2 * time.Hour)
	// Two ledger writes report a crash after writing: the fallback stops
	// mid-group twice and resumes on a fresh service each time.
	e.ledger.failAfterWrite.Store(2)
	ctx := e.ctx()
	for range 200 {
		if _, err := e.service().Poll(ctx); err != nil {
			t.Fatal(err)
		}
		if harvested(e.get(j.ID)) {
			break
		}
	}
	done := e.get(j.ID)
	if !harvested(done) {
		t.Fatalf("not harvested: %+v", done.Parts[0])
	}
	if _, fromSync := e.checkSources(done); fromSync != 10 {
		t.Errorf("%d items from the fallback, want 10", fromSync)
	}
	if n := e.sim.Stats().Routes[aoaisim.RouteChat]; n != 10 {
		t.Errorf("%d synchronous requests for 10 items: an item was asked twice", n)
	}
	rewritten := 0
	for unit, n := range e.ledger.records {
		if strings.Contains(unit, "/sync-") && n > 1 {
			rewritten++
		}
	}
	if rewritten == 0 {
		t.Errorf("no ledger unit was written twice: the crash did not happen where the test says")
	}
}

// complete_by is refused unless it is at least an hour and at most a week
// away, and the alias has a synchronous deployment to fall back to.
func TestDeadline_CompleteByValidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(600)})
	now := time.Now()
	for _, c := range []struct {
		by   time.Time
		code string
	}{
		{now.Add(59 * time.Minute), "invalid_complete_by"},
		{now.Add(8 * 24 * time.Hour), "invalid_complete_by"},
	} {
		_, _, err := e.svc.Submit(e.ctx(), e.tenants["contoso"], batch.Request{Alias: "summarize", Items: items(1, "x"), CompleteBy: c.by})
		var inv *batch.InvalidError
		if !errors.As(err, &inv) || inv.Code != c.code {
			t.Errorf("complete_by %v: %v, want %s", c.by.Sub(now), err, c.code)
		}
	}
	if _, _, err := e.svc.Submit(e.ctx(), e.tenants["contoso"], batch.Request{Alias: "summarize", Items: items(1, "x"), CompleteBy: now.Add(61 * time.Minute)}); err != nil {
		t.Errorf("complete_by in 61 min: %v", err)
	}
}

// failingDeletes is the blob store with DeletePrefix failing in the
// results container while fail is above zero (each failure counts down).
type failingDeletes struct {
	*blobstore.Store
	results string
	fail    atomic.Int32
}

func (f *failingDeletes) DeletePrefix(ctx context.Context, container, prefix string) error {
	if container == f.results && f.fail.Add(-1) >= 0 {
		return errors.New("storage unavailable")
	}
	return f.Store.DeletePrefix(ctx, container, prefix)
}

// The fallback's kept answers ({part}.sync.*) are deleted once its part is
// harvested; a failed delete leaves them listed on the job, which stays
// active, and a later tick deletes them.
func TestDeadline_KeptAnswersDeletedAfterAFailure(t *testing.T) {
	t.Parallel()
	e, clock := deadlineEnv(t, 600, 0, aoaisim.FaultRule{Deployment: batchDep, HoldValidating: aoaisim.Duration(48 * time.Hour)})
	blobs := &failingDeletes{Store: e.blobs, results: e.cont.Results}
	blobs.fail.Store(2)
	e.opts.Blobs = blobs
	e.svc = e.service()
	j := e.submit("contoso", items(4, "k"), func(r *batch.Request) { r.CompleteBy = clock.Now().Add(2 * time.Hour) })
	e.pollUntil(30*time.Second, func(j batch.Job) bool { return j.Parts[0].AzureStatus == "validating" }, j.ID)
	clock.Advance(2 * time.Hour)
	kept := func() []string {
		names, err := e.blobs.List(context.Background(), e.cont.Results, j.Tenant+"/"+j.ID+"/")
		if err != nil {
			t.Fatal(err)
		}
		return slices.DeleteFunc(names, func(n string) bool { return !strings.Contains(n, ".sync.") })
	}
	active := func() bool {
		refs, err := e.jobs.ListActive(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(refs, func(r batch.ActiveRef) bool { return r.ID == j.ID })
	}
	done := e.pollUntil(30*time.Second, harvested, j.ID)[j.ID]
	if _, fromSync := e.checkSources(done); fromSync != 4 {
		t.Fatalf("%d items from the fallback, want 4", fromSync)
	}
	if n := len(kept()); n != 4 || len(done.CleanupBlobs) != 1 || !active() {
		t.Fatalf("after the failed delete: %d kept answers, cleanup %v, active %v; want 4 left, listed, the job active", n, done.CleanupBlobs, active())
	}
	e.pollUntil(30*time.Second, func(j batch.Job) bool { return len(j.CleanupBlobs) == 0 }, j.ID)
	if n, left := len(kept()), blobs.fail.Load(); n != 0 || left >= 0 || active() {
		t.Errorf("after the cleanup: %d kept answers, %d failures left to inject, active %v; want none, none, inactive", n, left, active())
	}
	if r := e.results(e.get(j.ID)); len(r) != 4 {
		t.Errorf("%d result lines after the cleanup, want 4: the results must outlive the kept answers", len(r))
	}
}
