package aoaisim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"

	"github.com/offpath/offpath/internal/lines"
)

// EnqueuedTokens is the simulator's estimate of a batch input file's tokens,
// reported in deployment-enqueued-tokens and counted against the enqueued
// quota: ceil(file bytes / 4). Azure documents its estimate as "based on the
// number of characters and not the true token count"; this one is exactly
// predictable from the file size.
func EnqueuedTokens(fileBytes int64) int64 {
	return (fileBytes + CharsPerToken - 1) / CharsPerToken
}

// reserve adds n enqueued tokens to dep if they fit its quota. It returns the
// tokens already enqueued before the call.
func (s *Server) reserve(dep *deploymentState, n int64) (inUse int64, ok bool) {
	s.quotaMu.Lock()
	defer s.quotaMu.Unlock()
	inUse = dep.enqueued
	if q := dep.cfg.EnqueuedTokenQuota; q > 0 && inUse+n > q {
		return inUse, false
	}
	dep.enqueued += n
	return inUse, true
}

// release gives back the tokens a batch holds; called on every terminal
// state.
func (s *Server) release(b *batch) {
	var n int64
	s.batches.update(b, func(b *batch) { n, b.Reserved = b.Reserved, 0 })
	dep := s.deps[b.Deployment]
	if n == 0 || dep == nil {
		return
	}
	s.quotaMu.Lock()
	defer s.quotaMu.Unlock()
	dep.enqueued -= n
}

func tokenLimitMessage(dep *deploymentState, need, inUse int64) string {
	return fmt.Sprintf("Enqueued token limit reached for deployment '%s' (token_limit_exceeded): this job needs an estimated %d tokens, %d tokens are already enqueued, and the configured limit is %d. Retry once running jobs reach a terminal state.",
		dep.cfg.Name, need, inUse, dep.cfg.EnqueuedTokenQuota)
}

// errTokenLimit is the fail-fast refusal of a create call: HTTP 400 with
// code token_limit_exceeded (Azure's docs do not show which field carries the
// code; the message repeats it for clients that search the text).
func errTokenLimit(dep *deploymentState, need, inUse int64) *apiError {
	e := newAPIError(http.StatusBadRequest, "token_limit_exceeded", tokenLimitMessage(dep, need, inUse))
	e.Type = strPtr("invalid_request_error")
	return e
}

// peekDeployment reads body.model from the first line of a batch input file,
// or "" when the line is unreadable (then validation reports why).
func peekDeployment(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, err := lines.Read(bufio.NewReaderSize(f, 64<<10), nil, 16<<20)
	if err != nil || bytes.HasPrefix(line, []byte(utf8BOM)) {
		return ""
	}
	var l struct {
		Body struct {
			Model string `json:"model"`
		} `json:"body"`
	}
	if json.Unmarshal(line, &l) != nil {
		return ""
	}
	return l.Body.Model
}

// admissionGate makes batches take their validation-time quota decision in
// creation order, as one queue would, even though each runs on its own
// goroutine: batch n waits until every earlier batch has passed.
type admissionGate struct {
	mu      sync.Mutex
	issued  int64
	next    int64
	passed  map[int64]bool
	changed chan struct{}
}

func newAdmissionGate() *admissionGate {
	return &admissionGate{passed: make(map[int64]bool), changed: make(chan struct{})}
}

// ticket numbers a new batch.
func (g *admissionGate) ticket() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.issued++
	return g.issued
}

// wait blocks until every ticket before n has passed, or ctx is done.
func (g *admissionGate) wait(ctx context.Context, n int64) error {
	for {
		g.mu.Lock()
		ready, changed := g.next+1 >= n, g.changed
		g.mu.Unlock()
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// pass marks ticket n as passed; passing twice is harmless.
func (g *admissionGate) pass(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n <= g.next || g.passed[n] {
		return
	}
	g.passed[n] = true
	for g.passed[g.next+1] {
		delete(g.passed, g.next+1)
		g.next++
	}
	close(g.changed)
	g.changed = make(chan struct{})
}
