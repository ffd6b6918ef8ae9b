package aoaisim

import (
	"sync/atomic"
)

// deploymentState is a deployment with its limiter and counters.
type deploymentState struct {
	cfg     Deployment
	limiter *limiter // nil when unlimited

	requests         atomic.Int64 // requests answered by the model (not faults or 429s)
	throttled        atomic.Int64 // 429s sent
	charged          atomic.Int64 // tokens charged against TPM at admission
	promptTokens     atomic.Int64 // usage reported, synchronous and batch
	completionTokens atomic.Int64
	filtered         atomic.Int64 // content-filter refusals (both shapes)
	faultErrors      atomic.Int64
	faultResets      atomic.Int64
	faultHangs       atomic.Int64

	enqueued int64 // enqueued batch tokens; guarded by Server.quotaMu
}

func newDeploymentState(d Deployment, noLimits bool) *deploymentState {
	ds := &deploymentState{cfg: d}
	rpm := d.RPM
	if rpm < 0 {
		rpm = 0
	}
	if !noLimits && (rpm > 0 || d.TPM > 0) {
		ds.limiter = newLimiter(rpm, d.TPM)
	}
	return ds
}

// modelName is the model as responses name it ("gpt-4o-mini-2024-07-18").
func (d *deploymentState) modelName() string {
	if d.cfg.ModelVersion == "" {
		return d.cfg.Model
	}
	return d.cfg.Model + "-" + d.cfg.ModelVersion
}

// stats counts requests per route and faults without a deployment.
type stats struct {
	routes      map[string]*atomic.Int64 // fixed keys; read-only map
	faultErrors atomic.Int64
	faultResets atomic.Int64
	faultHangs  atomic.Int64
	inFlight    atomic.Int64 // model requests past fault injection, not yet answered
	open        atomic.Int64 // model requests received and not yet finished, hanging ones included
}

// opening counts a model request as open until the returned func is
// called, when its handler returns.
func (st *stats) opening() func() {
	st.open.Add(1)
	return func() { st.open.Add(-1) }
}

// answering counts a model request as in flight until the returned func
// is called, after its reply is written.
func (st *stats) answering() func() {
	st.inFlight.Add(1)
	return func() { st.inFlight.Add(-1) }
}

func newStats() *stats {
	st := &stats{routes: make(map[string]*atomic.Int64)}
	for _, r := range []string{RouteChat, RouteEmbeddings, RouteFilesCreate, RouteFilesList, RouteFilesGet,
		RouteFilesContent, RouteFilesDelete, RouteBatchesCreate, RouteBatchesList, RouteBatchesGet,
		RouteBatchesCancel, "unauthorized", "not_found"} {
		st.routes[r] = new(atomic.Int64)
	}
	return st
}

func (st *stats) route(name string) {
	if c := st.routes[name]; c != nil {
		c.Add(1)
	}
}

// fault counts an injected fault globally and, when known, per deployment.
func (st *stats) fault(d *deploymentState, kind faultKind) {
	switch kind {
	case faultError:
		st.faultErrors.Add(1)
		if d != nil {
			d.faultErrors.Add(1)
		}
	case faultReset:
		st.faultResets.Add(1)
		if d != nil {
			d.faultResets.Add(1)
		}
	case faultHang:
		st.faultHangs.Add(1)
		if d != nil {
			d.faultHangs.Add(1)
		}
	}
}

// DeploymentStats are the counters of one deployment.
type DeploymentStats struct {
	Name             string `json:"name"`
	Model            string `json:"model"`
	Type             string `json:"type"`
	TPM              int64  `json:"tpm"`
	RPM              int64  `json:"rpm"`
	Requests         int64  `json:"requests"`
	Throttled        int64  `json:"throttled"`
	TokensCharged    int64  `json:"tokens_charged"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	Filtered         int64  `json:"filtered"`
	FaultErrors      int64  `json:"fault_errors"`
	FaultResets      int64  `json:"fault_resets"`
	FaultHangs       int64  `json:"fault_hangs"`
	EnqueuedTokens   int64  `json:"enqueued_tokens"`
	EnqueuedQuota    int64  `json:"enqueued_token_quota"`
	QuotaBehaviour   string `json:"quota_behaviour,omitempty"`
}

// Stats are the server's counters, as GET /_sim/state reports them.
type Stats struct {
	Routes      map[string]int64 `json:"routes"`
	FaultErrors int64            `json:"fault_errors"`
	FaultResets int64            `json:"fault_resets"`
	FaultHangs  int64            `json:"fault_hangs"`
	// InFlight are the chat and embeddings requests the model is answering
	// now (past fault injection, reply not yet written): zero means every
	// request billed so far has been answered.
	InFlight int64 `json:"in_flight"`
	// Open are the chat and embeddings requests received and not finished,
	// whatever they wait for (a hang, a latency, the body): zero means no
	// request can still be answered, and billed, later.
	Open        int64             `json:"open"`
	Deployments []DeploymentStats `json:"deployments"`
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	out := Stats{
		Routes:      make(map[string]int64, len(s.stats.routes)),
		FaultErrors: s.stats.faultErrors.Load(),
		FaultResets: s.stats.faultResets.Load(),
		FaultHangs:  s.stats.faultHangs.Load(),
		InFlight:    s.stats.inFlight.Load(),
		Open:        s.stats.open.Load(),
	}
	for k, v := range s.stats.routes {
		out.Routes[k] = v.Load()
	}
	s.quotaMu.Lock()
	defer s.quotaMu.Unlock()
	for _, cfg := range s.cfg.Deployments {
		d := s.deps[cfg.Name]
		ds := DeploymentStats{
			Name: cfg.Name, Model: cfg.Model, Type: cfg.Type, TPM: cfg.TPM, RPM: cfg.RPM,
			Requests: d.requests.Load(), Throttled: d.throttled.Load(), TokensCharged: d.charged.Load(),
			PromptTokens: d.promptTokens.Load(), CompletionTokens: d.completionTokens.Load(),
			Filtered: d.filtered.Load(), FaultErrors: d.faultErrors.Load(), FaultResets: d.faultResets.Load(),
			FaultHangs: d.faultHangs.Load(), EnqueuedTokens: d.enqueued, EnqueuedQuota: cfg.EnqueuedTokenQuota,
		}
		if cfg.Type == TypeGlobalBatch {
			ds.QuotaBehaviour = cfg.QuotaBehaviour
		}
		out.Deployments = append(out.Deployments, ds)
	}
	return out
}
