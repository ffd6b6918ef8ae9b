package apptest

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/offpath/offpath/internal/testing/alertrules"
)

// Trace is one line of what Application Insights would receive from the
// app in Azure: a string of an invocation reply's Logs (the dev host reads
// the reply by the host's rules: a non-2xx reply's Logs are dropped), or a
// line of the handler's stdout and stderr (host logs).
type Trace struct {
	// Source is "invocation" (a reply's Logs string) or "stdout".
	Source string
	// Function is the invoked function, for an invocation's lines.
	Function string
	// Message is the trace's Message as Application Insights records it.
	Message string
}

// traces collects the app's traces.
type traces struct {
	mu      sync.Mutex
	got     []Trace
	changed chan struct{} // closed and replaced on each trace
	partial map[string][]byte
}

func newTraces() *traces {
	return &traces{changed: make(chan struct{}), partial: map[string][]byte{}}
}

func (t *traces) add(tr Trace) {
	t.mu.Lock()
	t.got = append(t.got, tr)
	close(t.changed)
	t.changed = make(chan struct{})
	t.mu.Unlock()
}

// lines splits a stream into lines and hands each complete one to fn.
func (t *traces) lines(stream string, p []byte, fn func(line []byte)) {
	t.mu.Lock()
	buf := append(t.partial[stream], p...)
	var done [][]byte
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		done = append(done, bytes.Clone(buf[:i]))
		buf = buf[i+1:]
	}
	t.partial[stream] = bytes.Clone(buf)
	t.mu.Unlock()
	for _, l := range done {
		if len(bytes.TrimSpace(l)) > 0 {
			fn(l)
		}
	}
}

// hostLog is the dev host's logger output: it keeps the lines that carry
// an invocation reply's Logs strings (source "invocation").
func (t *traces) hostLog() io.Writer {
	return writerFunc(func(p []byte) {
		t.lines("host", p, func(line []byte) {
			var l struct {
				Source   string `json:"source"`
				Function string `json:"function"`
				Message  string `json:"message"`
			}
			if json.Unmarshal(line, &l) == nil && l.Source == "invocation" {
				t.add(Trace{Source: "invocation", Function: l.Function, Message: l.Message})
			}
		})
	})
}

// handlerOutput keeps every line of the handler's output and passes the
// output on to next.
func (t *traces) handlerOutput(next io.Writer) io.Writer {
	return writerFunc(func(p []byte) {
		_, _ = next.Write(p)
		t.lines("stdout", p, func(line []byte) { t.add(Trace{Source: "stdout", Message: string(line)}) })
	})
}

type writerFunc func(p []byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// Traces returns the app's traces so far, in order.
func (s *Stack) Traces() []Trace {
	s.traces.mu.Lock()
	defer s.traces.mu.Unlock()
	return slices.Clone(s.traces.got)
}

// WaitRuleMatched waits up to timeout for a trace from source that the
// query of the log alert rule named rule selects (infra/modules/alerts.bicep,
// run as Log Analytics would) and returns it. It fails the test if none
// comes.
func (s *Stack) WaitRuleMatched(rule, source string, timeout time.Duration) Trace {
	s.tb.Helper()
	rules, err := alertrules.Load(s.root)
	if err != nil {
		s.tb.Fatal(err)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.traces.mu.Lock()
		changed := s.traces.changed
		got := slices.Clone(s.traces.got)
		s.traces.mu.Unlock()
		for _, tr := range got {
			if tr.Source == source && slices.Contains(alertrules.Fired(rules, tr.Message), rule) {
				return tr
			}
		}
		select {
		case <-changed:
		case <-deadline.C:
			var msgs []string
			for _, tr := range got {
				if tr.Source == source {
					msgs = append(msgs, tr.Message)
				}
			}
			s.tb.Fatalf("no %s trace matched rule %s within %v; %s traces: %q", source, rule, timeout, source, msgs)
		}
	}
}
