package azopenai_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/outcome"
)

func TestCreate_QuotaFailFast(t *testing.T) {
	t.Parallel()
	for _, sf := range surfaces() {
		t.Run(sf.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			env := newSim(t, simConfig(aoaisim.Deployment{Name: batchDep, Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch,
				EnqueuedTokenQuota: 100, QuotaBehaviour: aoaisim.QuotaFailFast}), nil)
			c := env.client(t, sf.cfg)
			in := writeInput(t, t.TempDir(), "quota", batchDep, items(20, "t"))
			file := upload(t, ctx, c, in)
			_, err := c.CreateBatch(ctx, batch.Submission{InputFileID: file.ID, JobID: "quota"})
			var qe *batch.QuotaError
			if !errors.Is(err, batch.ErrQuotaFull) || !errors.As(err, &qe) || outcome.Of(err) != outcome.Transient {
				t.Fatalf("CreateBatch error = %v, want ErrQuotaFull, transient", err)
			}
			if qe.EnqueuedTokens != in.part.EstimatedTokens || qe.MaxEnqueuedTokens != 100 {
				t.Errorf("QuotaError tokens = %d of %d, want %d of 100", qe.EnqueuedTokens, qe.MaxEnqueuedTokens, in.part.EstimatedTokens)
			}
			st := env.sim.State()
			if len(st.Batches) != 0 || st.Stats.Routes[aoaisim.RouteBatchesCreate] != 1 {
				t.Errorf("simulator holds %d batches after %d creates, want 0 after 1 (no retry)", len(st.Batches), st.Stats.Routes[aoaisim.RouteBatchesCreate])
			}
		})
	}
}

func TestCreate_QuotaAtValidation(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	env := newSim(t, simConfig(aoaisim.Deployment{Name: batchDep, Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch,
		EnqueuedTokenQuota: 100, QuotaBehaviour: aoaisim.QuotaFailAtValidation}), nil)
	c := env.client(t, azopenai.BatchConfig{APIKey: aoaisim.DefaultKey, Surface: azopenai.Classic})
	file := upload(t, ctx, c, writeInput(t, t.TempDir(), "quota", batchDep, items(20, "t")))
	created, err := c.CreateBatch(ctx, batch.Submission{InputFileID: file.ID, JobID: "quota"})
	if err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	b := waitFiles(t, ctx, c, created.Batch.ID)
	if b.Status != batch.AzureFailed || len(b.Errors) == 0 || b.Errors[0].Code != "token_limit_exceeded" {
		t.Fatalf("batch = %+v, want failed with token_limit_exceeded", b)
	}
	if err := b.Err(); !errors.Is(err, batch.ErrQuotaFull) || outcome.Of(err) != outcome.Transient {
		t.Errorf("Batch.Err() = %v, want ErrQuotaFull, transient", err)
	}
}

func TestBatchErr_ValidationFailureIsRejected(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	env := newSim(t, simConfig(), nil)
	c := env.client(t, azopenai.BatchConfig{APIKey: aoaisim.DefaultKey})
	file := upload(t, ctx, c, writeInput(t, t.TempDir(), "wrongdep", "no-such-deployment", items(2, "t")))
	created, err := c.CreateBatch(ctx, batch.Submission{InputFileID: file.ID, JobID: "wrongdep"})
	if err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	b := waitFiles(t, ctx, c, created.Batch.ID)
	if err := b.Err(); b.Status != batch.AzureFailed || outcome.Of(err) != outcome.Rejected || errors.Is(err, batch.ErrQuotaFull) {
		t.Errorf("batch %s, Err() = %v, want failed and rejected", b.Status, err)
	}
}

// createFault makes the first create request fail in one way, using the
// simulator's fault injection where the fault happens before the batch is
// made, and answering for the simulator where it happens after.
func createFault(mode string) func(*aoaisim.Server, http.Handler) http.Handler {
	var creates atomic.Int32
	return func(sim *aoaisim.Server, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/batches") || creates.Add(1) != 1 {
				next.ServeHTTP(w, r)
				return
			}
			rule := aoaisim.FaultRule{Route: aoaisim.RouteBatchesCreate}
			switch mode {
			case "reset before":
				rule.ResetRate = 1
			case "503 before":
				rule.ErrorRate, rule.ErrorStatus = 1, http.StatusServiceUnavailable
			case "hang before":
				rule.HangRate = 1
			case "reset after", "503 after":
				rec := httptest.NewRecorder()
				next.ServeHTTP(rec, r) // the batch is created; its reply is lost
				if mode == "503 after" {
					http.Error(w, `{"error":{"code":"ServiceUnavailable","message":"try later"}}`, http.StatusServiceUnavailable)
					return
				}
				resetConn(w)
				return
			}
			if err := sim.SetFaults([]aoaisim.FaultRule{rule}); err != nil {
				panic(err)
			}
			defer func() { _ = sim.SetFaults(nil) }()
			next.ServeHTTP(w, r)
		})
	}
}

func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// TestCreate_AmbiguousFailure: whatever happened to the first create, the
// adapter looks the submission up before creating again, and the simulator
// ends up with exactly one batch.
func TestCreate_AmbiguousFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode          string
		wantRecovered bool
		wantCreates   int64
	}{
		{"reset before", false, 2},
		{"503 before", false, 2},
		{"hang before", false, 2},
		{"reset after", true, 1},
		{"503 after", true, 1},
	}
	for _, tt := range tests {
		for _, sf := range []azopenai.Surface{azopenai.Classic, azopenai.V1} {
			t.Run(tt.mode+"/"+string(sf), func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				env := newSim(t, simConfig(), createFault(tt.mode))
				c := env.client(t, azopenai.BatchConfig{APIKey: aoaisim.DefaultKey, Surface: sf, RequestTimeout: 500 * time.Millisecond})
				file := upload(t, ctx, c, writeInput(t, t.TempDir(), "amb", batchDep, items(3, "t")))
				s := batch.Submission{InputFileID: file.ID, JobID: "amb", Part: 1, Attempt: 2}
				created, err := c.CreateBatch(ctx, s)
				if err != nil {
					t.Fatalf("CreateBatch: %v", err)
				}
				st := env.sim.State()
				if created.Recovered != tt.wantRecovered || len(st.Batches) != 1 || st.Batches[0].ID != created.Batch.ID {
					t.Fatalf("Recovered = %v, simulator holds %d batches; want recovered %v and exactly one", created.Recovered, len(st.Batches), tt.wantRecovered)
				}
				if got := st.Stats.Routes[aoaisim.RouteBatchesCreate]; got != tt.wantCreates {
					t.Errorf("create requests = %d, want %d", got, tt.wantCreates)
				}
				if st.Stats.Routes[aoaisim.RouteBatchesList] == 0 {
					t.Error("no lookup by listing before deciding")
				}
				// A restarted control plane that is unsure calls again: still one.
				s.MaybeCreated = true
				again, err := c.CreateBatch(ctx, s)
				if err != nil || !again.Recovered || again.Batch.ID != created.Batch.ID || len(env.sim.State().Batches) != 1 {
					t.Errorf("CreateBatch(MaybeCreated) = %+v, %v; want the same batch recovered", again, err)
				}
			})
		}
	}
}

func TestCreate_PersistentFailureIsAmbiguous(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := simConfig()
	cfg.Faults = []aoaisim.FaultRule{{Route: aoaisim.RouteBatchesCreate, ErrorRate: 1, ErrorStatus: http.StatusInternalServerError}}
	env := newSim(t, cfg, nil)
	c := env.client(t, azopenai.BatchConfig{APIKey: aoaisim.DefaultKey, MaxAttempts: 2})
	file := upload(t, ctx, c, writeInput(t, t.TempDir(), "p", batchDep, items(1, "t")))
	_, err := c.CreateBatch(ctx, batch.Submission{InputFileID: file.ID, JobID: "p"})
	if !errors.Is(err, batch.ErrAmbiguous) || outcome.Of(err) != outcome.Transient {
		t.Errorf("CreateBatch error = %v, want ErrAmbiguous, transient", err)
	}
	st := env.sim.State()
	if len(st.Batches) != 0 || st.Stats.Routes[aoaisim.RouteBatchesCreate] != 2 || st.Stats.Routes[aoaisim.RouteBatchesList] != 2 {
		t.Errorf("batches %d, creates %d, lists %d; want 0, 2, 2", len(st.Batches), st.Stats.Routes[aoaisim.RouteBatchesCreate], st.Stats.Routes[aoaisim.RouteBatchesList])
	}
}

func TestCreate_NewAttemptIsANewBatch(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	env := newSim(t, simConfig(), nil)
	c := env.client(t, azopenai.BatchConfig{APIKey: aoaisim.DefaultKey})
	file := upload(t, ctx, c, writeInput(t, t.TempDir(), "n", batchDep, items(1, "t")))
	first, err := c.CreateBatch(ctx, batch.Submission{InputFileID: file.ID, JobID: "n"})
	if err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	second, err := c.CreateBatch(ctx, batch.Submission{InputFileID: file.ID, JobID: "n", Attempt: 1, MaybeCreated: true})
	if err != nil || second.Recovered || second.Batch.ID == first.Batch.ID {
		t.Errorf("attempt 1 = %+v, %v; want a new batch", second, err)
	}
	// An upload whose reply was lost is uploaded again: the batch found by
	// the key is still the submission's, with the file it was created on.
	other := upload(t, ctx, c, writeInput(t, t.TempDir(), "n", batchDep, items(2, "t")))
	again, err := c.CreateBatch(ctx, batch.Submission{InputFileID: other.ID, JobID: "n", MaybeCreated: true, Since: time.Now()})
	if err != nil || !again.Recovered || again.Batch.ID != first.Batch.ID || again.Batch.InputFileID != file.ID {
		t.Errorf("same key, another file = %+v, %v; want batch %s recovered on its own file %s", again, err, first.Batch.ID, file.ID)
	}
	if n := len(env.sim.State().Batches); n != 2 {
		t.Errorf("%d batches, want 2 (attempts 0 and 1)", n)
	}
	for name, s := range map[string]batch.Submission{
		"no file":       {JobID: "n"},
		"no job":        {InputFileID: file.ID},
		"reserved meta": {InputFileID: file.ID, JobID: "n", Metadata: map[string]string{"offpath_job": "x"}},
	} {
		if _, err := c.CreateBatch(ctx, s); outcome.Of(err) != outcome.Rejected {
			t.Errorf("CreateBatch(%s) error = %v, want rejected", name, err)
		}
	}
}
