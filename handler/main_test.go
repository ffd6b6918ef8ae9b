package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "host.json"), []byte(`{"version":"2.0","functionTimeout":"00:05:00"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	copyModels(t, root)
	port := freePort(t)
	// Start-up does no storage I/O, so Azurite's default address need not answer.
	env := map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": strconv.Itoa(port), "FUNCTIONS_APP_ROOT_PATH": root,
		"AzureWebJobsStorage": "UseDevelopmentStorage=true"}
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }, out) }()

	base := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Get(base + "/")
		if err == nil {
			res.Body.Close()
			break
		}
		select {
		case rerr := <-done:
			t.Fatalf("handler stopped before answering GET /: %v", rerr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("handler never answered GET /: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	res, err := http.Get(base + "/api/v1/version")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Version string }
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil || v.Version != "dev" {
		t.Errorf("version = %+v, %v; want dev", v, err)
	}
	res.Body.Close()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run() = %v, want nil after graceful shutdown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if !strings.Contains(out.String(), `"message":"handler listening"`) {
		t.Errorf("log has no start-up line: %s", out.String())
	}
}

// copyModels puts the repository's models.json into an app folder.
func copyModels(tb testing.TB, dir string) {
	tb.Helper()
	b, err := os.ReadFile("../models.json")
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
