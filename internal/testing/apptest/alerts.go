package apptest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/alert"
)

// sink is the app's alert webhook: a loopback server that keeps every alert
// posted to it.
type sink struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []alert.Alert
	changed chan struct{} // closed and replaced on each alert
}

func newSink(tb testing.TB) *sink {
	s := &sink{changed: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a alert.Alert
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&a) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.got = append(s.got, a)
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	tb.Cleanup(s.srv.Close)
	return s
}

func (s *sink) url() string { return s.srv.URL + "/alerts" }

// Alerts returns the alerts the app has raised so far, in order.
func (s *Stack) Alerts() []alert.Alert {
	s.alerts.mu.Lock()
	defer s.alerts.mu.Unlock()
	return slices.Clone(s.alerts.got)
}

// WaitAlert waits up to timeout for an alert named name about job (any
// job if job is empty) and returns the first such alert. It fails the test
// if none comes; to assert that there is exactly one, count Alerts after.
func (s *Stack) WaitAlert(name, job string, timeout time.Duration) alert.Alert {
	s.tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.alerts.mu.Lock()
		changed := s.alerts.changed
		for _, a := range s.alerts.got {
			if a.Name == name && (job == "" || a.Job == job) {
				s.alerts.mu.Unlock()
				return a
			}
		}
		s.alerts.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			s.tb.Fatalf("no %s alert about job %q within %v; alerts: %+v", name, job, timeout, s.Alerts())
		}
	}
}

// CountAlerts returns how many alerts named name about job (any job if
// job is empty) the app has raised so far.
func (s *Stack) CountAlerts(name, job string) int {
	n := 0
	for _, a := range s.Alerts() {
		if a.Name == name && (job == "" || a.Job == job) {
			n++
		}
	}
	return n
}
