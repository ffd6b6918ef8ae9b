package batch_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/audit"
	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/testing/poll"
)

// afterCreate calls hook once a create has returned a batch, before the
// service records it.
type afterCreate struct {
	*azopenai.BatchClient
	hook func()
}

func (a *afterCreate) CreateBatch(ctx context.Context, s batch.Submission) (batch.Created, error) {
	c, err := a.BatchClient.CreateBatch(ctx, s)
	if err == nil && a.hook != nil {
		a.hook()
	}
	return c, err
}

// failingJobs fails the next Update after fail is armed, without writing.
type failingJobs struct {
	batch.JobStore
	fail atomic.Bool
}

func (f *failingJobs) Update(ctx context.Context, j batch.Job) (batch.Job, error) {
	if f.fail.CompareAndSwap(true, false) {
		return batch.Job{}, errors.New("table storage: 503 server busy")
	}
	return f.JobStore.Update(ctx, j)
}

// TestCreateWindow: wherever the reply of an upload or a create is lost,
// or the record of it, the part ends as one Azure batch, harvested, with
// the ledger holding what Azure's output says; no batch_failed, no Azure
// file left, and the second-door audit quiet.
func TestCreateWindow(t *testing.T) {
	t.Parallel()
	lost := func(route string, rule aoaisim.FaultRule) aoaisim.FaultRule {
		rule.Route, rule.AfterCommit, rule.Times = route, true, 1
		return rule
	}
	tests := []struct {
		name string
		// admit runs the first admission, doing what the case loses.
		admit       func(t *testing.T, e *env, jobID string)
		wantUploads int64
	}{
		{"upload stored, reply reset", func(t *testing.T, e *env, _ string) {
			e.faults(lost(aoaisim.RouteFilesCreate, aoaisim.FaultRule{ResetRate: 1}))
			e.pollOnce(e.svc)
		}, 1},
		{"upload stored, process killed waiting for the reply", func(t *testing.T, e *env, _ string) {
			e.faults(lost(aoaisim.RouteFilesCreate, aoaisim.FaultRule{Latency: aoaisim.Duration(time.Hour)}))
			e.killWhen(func(st aoaisim.State) bool { return len(st.Files) == 1 })
		}, 1},
		{"create committed, reply reset", func(t *testing.T, e *env, _ string) {
			e.faults(lost(aoaisim.RouteBatchesCreate, aoaisim.FaultRule{ResetRate: 1}))
			e.pollOnce(e.svc)
		}, 1},
		{"create committed, process killed waiting for the reply", func(t *testing.T, e *env, _ string) {
			e.faults(lost(aoaisim.RouteBatchesCreate, aoaisim.FaultRule{Latency: aoaisim.Duration(time.Hour)}))
			e.killWhen(func(st aoaisim.State) bool { return len(st.Batches) == 1 })
		}, 1},
		{"create committed, its record not written", func(t *testing.T, e *env, _ string) {
			jobs := &failingJobs{JobStore: e.jobs}
			o := e.opts
			o.Jobs, o.Azure = jobs, &afterCreate{BatchClient: e.azure, hook: func() { jobs.fail.Store(true) }}
			svc, err := batch.New(o)
			if err != nil {
				t.Fatal(err)
			}
			e.pollOnce(svc)
			if p := e.get(e.onlyJob()).Parts[0]; p.BatchID != "" || p.InputFileID == "" {
				t.Fatalf("after the failed record: part %+v; want its input file known and no batch recorded", p)
			}
		}, 1},
		{"job row stale: storage lost the admission", func(t *testing.T, e *env, jobID string) {
			before := e.get(jobID)
			e.pollOnce(e.svc)
			now := e.get(jobID)
			if now.Parts[0].BatchID == "" {
				t.Fatal("the first admission recorded no batch")
			}
			before.ETag = now.ETag
			if _, err := e.jobs.Update(context.Background(), before); err != nil {
				t.Fatal(err)
			}
		}, 2}, // the stale row uploads again; the batch found by its key keeps its own file
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envConfig{sim: simConfig(3000)})
			j := e.submit("contoso", items(12, "w"))
			tt.admit(t, e, j.ID)
			e.faults()
			got := e.pollUntil(30*time.Second, harvested, j.ID)[j.ID]
			e.check(got, map[batch.Outcome]int{batch.OK: 12})
			st := e.sim.State()
			if len(st.Batches) != 1 || got.Parts[0].BatchID != st.Batches[0].ID {
				t.Fatalf("Azure holds %d batches, the part names %s; want exactly the one", len(st.Batches), got.Parts[0].BatchID)
			}
			if n := st.Stats.Routes[aoaisim.RouteFilesCreate]; n != tt.wantUploads {
				t.Errorf("%d uploads, want %d", n, tt.wantUploads)
			}
			if len(st.Files) != 0 {
				t.Errorf("Azure files left: %+v", st.Files)
			}
			if e.alerts.Count(batch.AlertFailed) != 0 {
				t.Errorf("alerts %v; want no %s", e.alerts.Names(), batch.AlertFailed)
			}
			e.wantAzureUsage(got.Tenant, batchDep)
			if s := e.audit(t).run(); s.Offpath != 1 || s.Orphans != 0 || s.Unknown != 0 || s.Alerted != 0 || s.FilesAlerted != 0 || s.Errors != 0 {
				t.Errorf("audit after the harvest: %+v; want quiet", s)
			}
			if n := len(e.alerts.All()); n != 0 {
				t.Errorf("alerts: %v", e.alerts.Names())
			}
		})
	}
}

// TestCreateWindow_JobRowLost: the process dies while Azure creates the
// batch, and the job's row is lost with it. Nobody's job claims the batch,
// so the audit raises one batch_orphaned alert and, once the batch ends,
// books its usage once to the tenant its metadata names.
func TestCreateWindow_JobRowLost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{sim: simConfig(3000)})
	j := e.submit("contoso", items(12, "o"))
	e.faults(aoaisim.FaultRule{Route: aoaisim.RouteBatchesCreate, AfterCommit: true, Times: 1, Latency: aoaisim.Duration(time.Hour)})
	e.killWhen(func(st aoaisim.State) bool { return len(st.Batches) == 1 })
	if _, err := e.tables.NewClient("bjobs"+e.suffix).DeleteEntity(context.Background(), "contoso", "j:"+j.ID, nil); err != nil {
		t.Fatalf("delete the job row: %v", err)
	}
	a := e.audit(t)
	if err := a.tenants.Create(context.Background(), e.tenants["contoso"]); err != nil {
		t.Fatal(err)
	}
	first := a.run()
	if first.Orphans != 1 || first.Alerted != 1 {
		t.Fatalf("audit: %+v; want the orphan alerted", first)
	}
	id := e.sim.State().Batches[0].ID
	e.waitBatchEnd(id)
	// The first run may have seen it ended already (Azure's clock is fast).
	if s := a.run(); first.Booked+s.Booked != 1 || s.Alerted != 0 {
		t.Fatalf("audits %+v, %+v; want it booked once, alerted once", first, s)
	}
	if s := a.run(); s.Booked != 0 || s.Alerted != 0 {
		t.Errorf("audit again: %+v; want nothing new", s)
	}
	if got := e.alerts.Named(audit.AlertOrphan); len(got) != 1 || got[0].Fields["offpath_job"] != j.ID {
		t.Errorf("alerts %v; want one %s naming job %s", e.alerts.Names(), audit.AlertOrphan, j.ID)
	}
	if e.alerts.Count(batch.AlertFailed) != 0 {
		t.Errorf("alerts %v; want no %s", e.alerts.Names(), batch.AlertFailed)
	}
	e.wantAzureUsage("contoso", batchDep)
	rows, err := e.ledger.Month(context.Background(), "contoso", ledger.MonthOf(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Unit != audit.OrphanUnit(id) {
		t.Errorf("ledger rows %+v; want one, %s", rows, audit.OrphanUnit(id))
	}
}

func (e *env) faults(rules ...aoaisim.FaultRule) {
	e.t.Helper()
	if err := e.sim.SetFaults(rules); err != nil {
		e.t.Fatal(err)
	}
}

// pollOnce runs one tick of svc.
func (e *env) pollOnce(svc *batch.Service) {
	e.t.Helper()
	if _, err := svc.Poll(e.ctx()); err != nil {
		e.t.Fatalf("Poll: %v", err)
	}
}

// killWhen runs a tick in a process that dies (its context cancelled:
// nothing more is written) as soon as Azure's state satisfies cond.
func (e *env) killWhen(cond func(aoaisim.State) bool) {
	e.t.Helper()
	ctx, kill := context.WithCancel(e.ctx())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.service().Poll(ctx)
	}()
	if !poll.Within(20*time.Second, func() bool { return cond(e.sim.State()) }) {
		kill()
		e.t.Fatal("the tick never reached the point of the kill")
	}
	kill()
	<-done
}

// onlyJob is the id of the env's one job.
func (e *env) onlyJob() string {
	e.t.Helper()
	refs, err := e.jobs.ListActive(context.Background())
	if err != nil || len(refs) != 1 {
		e.t.Fatalf("active jobs %+v, %v; want one", refs, err)
	}
	return refs[0].ID
}

// waitBatchEnd waits until Azure's batch has ended with its files.
func (e *env) waitBatchEnd(id string) {
	e.t.Helper()
	poll.Until(e.t, 20*time.Second, "batch "+id+" to finish", func() bool {
		b, _ := e.azure.GetBatch(context.Background(), id)
		return b.FilesReady()
	})
}

// wantAzureUsage checks that the tenant's ledger rows on a deployment hold
// exactly the tokens the simulator served on it.
func (e *env) wantAzureUsage(tenantID, deployment string) {
	e.t.Helper()
	var served aoaisim.DeploymentStats
	for _, d := range e.sim.Stats().Deployments {
		if d.Name == deployment {
			served = d
		}
	}
	rows, err := e.ledger.Month(context.Background(), tenantID, ledger.MonthOf(time.Now()))
	if err != nil {
		e.t.Fatal(err)
	}
	var prompt, completion int64
	for _, r := range rows {
		if r.Deployment == deployment {
			prompt, completion = prompt+r.PromptTokens, completion+r.CompletionTokens
		}
	}
	if served.PromptTokens == 0 || prompt != served.PromptTokens || completion != served.CompletionTokens {
		e.t.Errorf("ledger %d/%d tokens on %s, Azure served %d/%d", prompt, completion, deployment, served.PromptTokens, served.CompletionTokens)
	}
}

// auditEnv is a second-door audit over the env's resource and stores.
type auditEnv struct {
	t       testing.TB
	e       *env
	a       *audit.Auditor
	tenants *tablestore.Tenants
}

func (e *env) audit(t testing.TB) *auditEnv {
	t.Helper()
	ae := &auditEnv{t: t, e: e, tenants: tablestore.NewTenants(e.tables, "bten"+e.suffix)}
	// The audit reads the env's job table through a store of its own: it
	// also asks for jobs by id alone, which the service never does.
	jobs := tablestore.NewJobs(e.tables, "bjobs"+e.suffix, nil)
	a, err := audit.New(audit.Options{Azure: e.azure, Active: jobs, Jobs: jobs, Store: tablestore.NewAudit(e.tables, "baud"+e.suffix),
		Ledger: e.ledger, Tenants: ae.tenants, Catalog: e.catalog, Alerts: e.alerts})
	if err != nil {
		t.Fatal(err)
	}
	ae.a = a
	return ae
}

func (ae *auditEnv) run() audit.Summary {
	ae.t.Helper()
	s, err := ae.a.Run(ae.e.ctx())
	if err != nil {
		ae.t.Fatalf("audit: %v", err)
	}
	return s
}
