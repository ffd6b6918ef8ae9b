package aoaisim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
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
	line, err := readLine(bufio.NewReaderSize(f, 64<<10), nil, 16<<20)
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
