package aoaisim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Route names, used by fault rules and counters. A rule's Route may also be a
// group: "chat", "embeddings", "files" or "batches" match every route that
// starts with that word.
const (
	RouteChat          = "chat_completions"
	RouteEmbeddings    = "embeddings"
	RouteFilesCreate   = "files_create"
	RouteFilesList     = "files_list"
	RouteFilesGet      = "files_get"
	RouteFilesContent  = "files_content"
	RouteFilesDelete   = "files_delete"
	RouteBatchesCreate = "batches_create"
	RouteBatchesList   = "batches_list"
	RouteBatchesGet    = "batches_get"
	RouteBatchesCancel = "batches_cancel"
)

// FaultRule injects faults into the requests it matches. Every matching rule
// applies: latencies add up, then each rule draws once and may reset the
// connection, hang the request, or reply 500/503, with the given
// probabilities (their sum must not exceed 1).
type FaultRule struct {
	// Deployment limits the rule to one deployment; "" matches all requests,
	// including files routes, which have no deployment.
	Deployment string `json:"deployment,omitempty"`
	// Route limits the rule to a route or route group; "" matches all.
	Route string `json:"route,omitempty"`
	// ErrorRate is the probability of an error reply.
	ErrorRate float64 `json:"error_rate,omitempty"`
	// ErrorStatus is 500 or 503; 0 picks either with equal probability.
	ErrorStatus int `json:"error_status,omitempty"`
	// Latency is added (real time) before the request is answered.
	Latency Duration `json:"latency,omitempty"`
	// ResetRate is the probability of a TCP reset instead of a reply.
	ResetRate float64 `json:"reset_rate,omitempty"`
	// HangRate is the probability of never replying (until the client gives
	// up or the server closes).
	HangRate float64 `json:"hang_rate,omitempty"`
	// OutputFileDelay makes matching batches (by deployment) report completed
	// without output_file_id and error_file_id for this long (simulated time).
	OutputFileDelay Duration `json:"output_file_delay,omitempty"`
	// HoldValidating keeps matching batches (by deployment, created while
	// the rule is in force) in validating this much longer than the
	// configured validation time (simulated time), as Azure does with a
	// busy region. A cancel still moves such a batch to cancelling, then
	// cancelled; one whose completion window closes first expires with
	// every line in the error file as batch_expired.
	HoldValidating Duration `json:"hold_validating,omitempty"`
	// AfterCommit applies the rule's latency and faults to the reply of a
	// request that has been carried out: on the routes that change state
	// (files_create, files_delete, batches_create, batches_cancel) the file
	// is stored or the batch created, and then the reply is delayed, reset,
	// hung or replaced by a 500/503, as when a network or a front end loses
	// Azure's answer. On other routes it delays or breaks the reply alike.
	AfterCommit bool `json:"after_commit,omitempty"`
	// Times limits the rule to the first Times requests it faults (a latency
	// alone counts too); 0 is no limit. The rule stays listed, spent.
	Times int `json:"times,omitempty"`
}

func (r FaultRule) validate() error {
	for _, p := range []float64{r.ErrorRate, r.ResetRate, r.HangRate} {
		if p < 0 || p > 1 {
			return fmt.Errorf("rate %v outside [0, 1]", p)
		}
	}
	if r.ErrorRate+r.ResetRate+r.HangRate > 1+1e-9 {
		return errors.New("error_rate + reset_rate + hang_rate exceeds 1")
	}
	if r.ErrorStatus != 0 && r.ErrorStatus != http.StatusInternalServerError && r.ErrorStatus != http.StatusServiceUnavailable {
		return fmt.Errorf("error_status %d is not 500 or 503", r.ErrorStatus)
	}
	if r.Latency < 0 || r.OutputFileDelay < 0 || r.HoldValidating < 0 {
		return errors.New("negative duration")
	}
	if r.Times < 0 {
		return errors.New("negative times")
	}
	return nil
}

func (r FaultRule) matches(route, deployment string) bool {
	if r.Deployment != "" && r.Deployment != deployment {
		return false
	}
	return r.Route == "" || r.Route == route || strings.HasPrefix(route, r.Route+"_")
}

// faultKind is what happened to a request.
type faultKind int

const (
	faultNone faultKind = iota
	faultError
	faultReset
	faultHang
)

// faults holds the active rules, how often each has acted (for Times), and
// the seeded random source.
type faults struct {
	mu    sync.Mutex
	rules []FaultRule
	used  []int
	rng   *rand.Rand
}

func newFaults(rules []FaultRule, seed uint64) *faults {
	return &faults{rules: rules, used: make([]int, len(rules)), rng: rand.New(rand.NewPCG(seed, seed^0x5eed))}
}

// Set replaces the rules after validating them.
func (f *faults) set(rules []FaultRule) error {
	for i, r := range rules {
		if err := r.validate(); err != nil {
			return fmt.Errorf("rule %d: %w", i, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append([]FaultRule(nil), rules...)
	f.used = make([]int, len(rules))
	return nil
}

func (f *faults) list() []FaultRule {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FaultRule{}, f.rules...)
}

// draw decides the fault of one request, from the rules that act before
// the request is carried out (afterCommit false) or on its reply (true).
func (f *faults) draw(route, deployment string, afterCommit bool) (latency time.Duration, kind faultKind, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.rules {
		if r.AfterCommit != afterCommit || !r.matches(route, deployment) || r.Times > 0 && f.used[i] >= r.Times {
			continue
		}
		acted := r.Latency > 0
		latency += r.Latency.D()
		if kind == faultNone && r.ErrorRate+r.ResetRate+r.HangRate > 0 {
			u := f.rng.Float64()
			switch {
			case u < r.ResetRate:
				kind, acted = faultReset, true
			case u < r.ResetRate+r.HangRate:
				kind, acted = faultHang, true
			case u < r.ResetRate+r.HangRate+r.ErrorRate:
				kind, status, acted = faultError, r.ErrorStatus, true
				if status == 0 {
					status = http.StatusInternalServerError
					if f.rng.IntN(2) == 1 {
						status = http.StatusServiceUnavailable
					}
				}
			}
		}
		if acted {
			f.used[i]++
		}
	}
	return latency, kind, status
}

// outputFileDelay is the largest OutputFileDelay of the rules matching a
// batch of deployment.
func (f *faults) outputFileDelay(deployment string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var d time.Duration
	for _, r := range f.rules {
		if r.matches(RouteBatchesGet, deployment) {
			d = max(d, r.OutputFileDelay.D())
		}
	}
	return d
}

// holdValidating is the largest HoldValidating of the rules matching a
// batch of deployment.
func (f *faults) holdValidating(deployment string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var d time.Duration
	for _, r := range f.rules {
		if r.matches(RouteBatchesCreate, deployment) {
			d = max(d, r.HoldValidating.D())
		}
	}
	return d
}

// inject applies the faults drawn for a request before it is carried out.
// It returns true when it has dealt with the request (error written,
// connection reset, or hang over).
func (s *Server) inject(ctx context.Context, w http.ResponseWriter, route, deployment string) bool {
	return s.injectFaults(ctx, w, route, deployment, false)
}

// injectReply applies the AfterCommit faults to the reply of a request
// that has been carried out. It returns true when the reply is lost (the
// caller writes nothing more).
func (s *Server) injectReply(ctx context.Context, w http.ResponseWriter, route, deployment string) bool {
	return s.injectFaults(ctx, w, route, deployment, true)
}

func (s *Server) injectFaults(ctx context.Context, w http.ResponseWriter, route, deployment string, afterCommit bool) bool {
	latency, kind, status := s.faults.draw(route, deployment, afterCommit)
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return true
		case <-s.closing:
			t.Stop()
		}
	}
	if kind == faultNone {
		return false
	}
	s.stats.fault(s.deps[deployment], kind)
	s.log.Debug().Str("route", route).Str("deployment", deployment).Int("fault", int(kind)).Msg("fault injected")
	switch kind {
	case faultError:
		writeError(w, errFault(status))
	case faultReset:
		resetConnection(w)
	case faultHang:
		select {
		case <-ctx.Done():
		case <-s.closing:
		}
		resetConnection(w)
	}
	return true
}

// resetConnection hijacks the connection and closes it with SO_LINGER 0, so
// the client sees a TCP reset rather than a reply. Without hijacking support
// (HTTP/2) it aborts the handler, which resets the stream.
func resetConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}
