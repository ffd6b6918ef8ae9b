package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/testing/poll"
	"github.com/offpath/offpath/internal/testing/slowloris"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t *testing.T) int { return freePortAny(t) }

func freePortAny(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestRun_ServesAndShutsDown(t *testing.T) {
	t.Parallel()
	h := startHandler(t, nil)
	res, err := http.Get(h.base + "/api/v1/version")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Version string }
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil || v.Version != "dev" {
		t.Errorf("version = %+v, %v; want dev", v, err)
	}
	res.Body.Close()

	h.cancel()
	select {
	case <-h.done:
		if h.err != nil {
			t.Fatalf("run() = %v, want nil after graceful shutdown", h.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if !strings.Contains(h.out.String(), `"message":"handler listening"`) {
		t.Errorf("log has no start-up line: %s", h.out.String())
	}
}

// TestRun_CutsOffSlowClients: a client that sends its body (or its
// headers) a byte at a time is cut off once OFFPATH_REQUEST_READ_TIMEOUT
// has passed, however long it would go on.
func TestRun_CutsOffSlowClients(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	h := startHandler(t, map[string]string{"OFFPATH_REQUEST_READ_TIMEOUT": timeout.String()})
	addr := strings.TrimPrefix(h.base, "http://")
	// An invocation, as the Functions host sends it: its body is read first.
	head := "POST /batch-poll HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
	for name, trickle := range map[string]func(string, string, time.Duration, time.Duration) (slowloris.Result, error){
		"body": slowloris.Body, "headers": slowloris.Headers,
	} {
		r, err := trickle(addr, head, 10*time.Millisecond, 20*timeout)
		if err != nil {
			t.Fatalf("slow %s: %v", name, err)
		}
		if r.Elapsed < timeout {
			t.Errorf("slow %s: cut off after %v, before the %v timeout", name, r.Elapsed, timeout)
		}
		t.Logf("slow %s: cut off after %v and %d bytes; the server answered %q", name, r.Elapsed.Round(time.Millisecond), r.Sent, firstLine(r.Response))
	}
	// The handler still serves.
	res, err := http.Get(h.base + "/api/v1/health")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("health after the slow clients: %v %v", res, err)
	}
	res.Body.Close()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\r\n")
	return line
}

// runningHandler is run in the background, answering.
type runningHandler struct {
	base   string
	out    *syncBuffer
	cancel context.CancelFunc
	// done is closed when run returns err.
	done chan struct{}
	err  error
}

// startHandler runs the handler with an app folder of its own and the
// settings in extra, and waits until it answers.
func startHandler(t *testing.T, extra map[string]string) *runningHandler {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "host.json"), []byte(`{"version":"2.0","functionTimeout":"00:05:00"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	copyModels(t, root)
	for attempt := 1; ; attempt++ {
		h, err := tryHandler(t, root, extra)
		if err == nil {
			return h
		}
		// The free port was taken by a test running in parallel: another.
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
	}
}

func tryHandler(t *testing.T, root string, extra map[string]string) (*runningHandler, error) {
	port := freePort(t)
	// Start-up does no storage I/O, so Azurite's default address need not answer.
	env := map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": strconv.Itoa(port), "FUNCTIONS_APP_ROOT_PATH": root,
		"AzureWebJobsStorage": "UseDevelopmentStorage=true"}
	for k, v := range extra {
		env[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &runningHandler{base: "http://127.0.0.1:" + strconv.Itoa(port), out: &syncBuffer{}, done: make(chan struct{}), cancel: cancel}
	go func() {
		h.err = run(ctx, func(k string) string { return env[k] }, h.out)
		close(h.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
		}
	})
	var err error
	stopped := false
	poll.Within(10*time.Second, func() bool {
		var res *http.Response
		if res, err = http.Get(h.base + "/"); err == nil {
			res.Body.Close()
			return true
		}
		select {
		case <-h.done:
			stopped = true
		default:
		}
		return stopped
	})
	switch {
	case stopped:
		return nil, fmt.Errorf("handler stopped before answering GET /: %w", h.err)
	case err != nil:
		return nil, fmt.Errorf("handler never answered GET /: %w", err)
	}
	return h, nil
}

// copyModels puts the repository's models.json into an app folder.
func copyModels(tb testing.TB, dir string) {
	tb.Helper()
	b, err := os.ReadFile("../../models.json")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "models.json"), b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

func TestRun_RefusesBadCatalog(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "host.json"), []byte(`{"functionTimeout":"00:05:00"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": strconv.Itoa(freePort(t)), "FUNCTIONS_APP_ROOT_PATH": root,
		"AzureWebJobsStorage": "UseDevelopmentStorage=true",
		"OFFPATH_MODELS":      `{"version":1,"aliases":{"summarize":{"queue":{"deployment":"gpt-4o-mini","price":{"input_per_1m":0,"cached_input_per_1m":0,"output_per_1m":1}}}}}`}
	err := run(context.Background(), func(k string) string { return env[k] }, &syncBuffer{})
	if err == nil || !strings.Contains(err.Error(), "aliases.summarize.queue.price.input_per_1m: must be > 0") {
		t.Fatalf("run() = %v, want a configuration error naming the field", err)
	}
}

func TestRun_RefusesBadConfiguration(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), func(string) string { return "" }, &syncBuffer{})
	if err == nil || !strings.Contains(err.Error(), "FUNCTIONS_CUSTOMHANDLER_PORT") {
		t.Fatalf("run() = %v, want a configuration error naming the port", err)
	}
}
