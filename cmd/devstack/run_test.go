package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// repoRoot is the repository, from this package's folder.
const repoRoot = "../.."

// handlerBuild is the handler built once for this test binary.
//
//nolint:gochecknoglobals // one build per test binary, shared by its tests
var handlerBuild struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if handlerBuild.path != "" {
		_ = os.RemoveAll(filepath.Dir(handlerBuild.path))
	}
	os.Exit(code)
}

// appFolder assembles an app folder as make app does: the handler, host.json,
// models.json and the functions.
func appFolder(t *testing.T) string {
	t.Helper()
	handlerBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "offpath-devstack-test-")
		if err != nil {
			handlerBuild.err = err
			return
		}
		handlerBuild.path = filepath.Join(dir, "handler")
		cmd := exec.Command("go", "build", "-o", handlerBuild.path, "./cmd/handler")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			handlerBuild.err = fmt.Errorf("go build ./cmd/handler: %w\n%s", err, out)
		}
	})
	if handlerBuild.err != nil {
		t.Fatal(handlerBuild.err)
	}
	app := t.TempDir()
	copyTo := func(src, dst string, mode os.FileMode) {
		b, err := os.ReadFile(src)
		if err == nil {
			err = os.MkdirAll(filepath.Dir(dst), 0o755)
		}
		if err == nil {
			err = os.WriteFile(dst, b, mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	copyTo(handlerBuild.path, filepath.Join(app, "handler"), 0o755)
	copyTo(filepath.Join(repoRoot, "host.json"), filepath.Join(app, "host.json"), 0o644)
	copyTo(filepath.Join(repoRoot, "models.json"), filepath.Join(app, "models.json"), 0o644)
	defs, err := filepath.Glob(filepath.Join(repoRoot, "functions", "*", "function.json"))
	if err != nil || len(defs) == 0 {
		t.Fatalf("functions: %v, %v", defs, err)
	}
	for _, d := range defs {
		copyTo(d, filepath.Join(app, filepath.Base(filepath.Dir(d)), "function.json"), 0o644)
	}
	return app
}

// consoleLog collects what devstack prints and tells when a line appears.
type consoleLog struct {
	mu    sync.Mutex
	lines []string
	ready chan struct{}
}

func (c *consoleLog) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// startStack runs devstack, make run's entry point, with args on a fresh
// state folder, without the demo; it returns once the console says Ready,
// with the console and the env file's path. The test's end stops it.
func startStack(t *testing.T, args ...string) (*consoleLog, string) {
	t.Helper()
	state := t.TempDir()
	args = append([]string{"-app", appFolder(t), "-state", state, "-settings", filepath.Join(repoRoot, "local.settings.json.example"), "-demo=false"}, args...)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	console := &consoleLog{ready: make(chan struct{})}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			console.mu.Lock()
			console.lines = append(console.lines, sc.Text())
			console.mu.Unlock()
			if strings.HasPrefix(strings.TrimSpace(sc.Text()), "Ready in ") {
				once.Do(func() { close(console.ready) })
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	stopped := make(chan error, 1)
	go func() {
		stopped <- run(ctx, args, pw)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(time.Minute):
			t.Error("devstack did not stop within a minute of its context's end")
		}
		<-read
	})
	select {
	case <-console.ready:
	case err := <-stopped:
		t.Fatalf("devstack ended before it was ready: %v\n%s", err, console)
	case <-time.After(3 * time.Minute):
		t.Fatalf("devstack not ready after 3 minutes:\n%s", console)
	}
	return console, filepath.Join(state, "env")
}

func TestRun_BusyDefaultPort_ComesUpOnAnother(t *testing.T) {
	t.Parallel()
	// Hold the default port; if something else already holds it, it is
	// busy all the same.
	if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", defaultPort)); err == nil {
		t.Cleanup(func() { ln.Close() })
	}
	console, envFile := startStack(t)
	env, err := readEnv(envFile)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(env["OFFPATH_URL"])
	if err != nil || u.Port() == "" || u.Port() == fmt.Sprint(defaultPort) {
		t.Fatalf("OFFPATH_URL = %q, %v; want another port than %d", env["OFFPATH_URL"], err, defaultPort)
	}
	text := console.String()
	if want := fmt.Sprintf("port %d is busy", defaultPort); !strings.Contains(text, want) || !strings.Contains(text, "listens on port "+u.Port()) {
		t.Errorf("the console does not say that port %d is busy and %s is used instead:\n%s", defaultPort, u.Port(), text)
	}
	if !strings.Contains(text, "API                     "+env["OFFPATH_URL"]+"/api/v1") {
		t.Errorf("the console does not show the API at %s:\n%s", env["OFFPATH_URL"], text)
	}
	status, err := call(context.Background(), http.MethodGet, env["OFFPATH_URL"]+"/api/v1/health", env["OFFPATH_FUNCTION_KEY"], "", nil, nil)
	if err != nil || status != http.StatusOK {
		t.Errorf("GET /api/v1/health on the port chosen: %d, %v", status, err)
	}
	for _, f := range []string{"handler.log", "devhost.log"} {
		if info, err := os.Stat(filepath.Join(filepath.Dir(envFile), "logs", f)); err != nil || info.Size() == 0 {
			t.Errorf("logs/%s: %v, %v; want the full log there", f, info, err)
		}
	}
	if info, err := os.Stat(envFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("env file: %v, %v; want mode 0600 (it holds keys)", info, err)
	}
	// After Ready: nothing but the story, warnings and alerts; no log lines.
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "{") {
			t.Errorf("a log line on the console: %s", l)
		}
	}
}

func TestListen_PortAskedForIsBusy_Fails(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := held.Addr().(*net.TCPAddr).Port
	if ln, _, err := listen(port, defaultPort); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("port %d cannot be used", port)) {
		if ln != nil {
			ln.Close()
		}
		t.Errorf("listen(%d) on a busy port: %v; want a clear error", port, err)
	}
	ln, note, err := listen(0, port)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got := ln.Addr().(*net.TCPAddr).Port; got == port || !strings.Contains(note, fmt.Sprintf("port %d is busy", port)) || !strings.Contains(note, fmt.Sprint(got)) {
		t.Errorf("default port busy: listening on %d, note %q", got, note)
	}
}

func TestNotice_WarningsAndAlertsOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ev   map[string]any
		want string
	}{
		{map[string]any{"level": "info", "message": "invocation", "function": "batch-poll"}, ""},
		{map[string]any{"level": "warn", "message": "cancel at Azure failed", "job": "j1", "error": "boom"}, "  warning: cancel at Azure failed (job=j1, error=boom) [handler]"},
		{map[string]any{"level": "error", "message": "offpath-alert name=batch_expired: job j1 expired", "job": "j1"}, "  ALERT batch_expired: job j1 expired (job=j1) [handler]"},
		{map[string]any{"level": "error", "message": "offpath-alert name=batch_expired: copy", "source": "invocation"}, ""},
	} {
		if got := notice("handler", tc.ev); got != tc.want {
			t.Errorf("notice(%v) = %q, want %q", tc.ev, got, tc.want)
		}
	}
}

// TestRescore_CancelsMidWay runs make demo-rescore's walk against a stack:
// the job is cancelled while Azure runs it, so some items end ok and the
// rest cancelled, the done ones are billed, and a second cancel is refused.
func TestRescore_CancelsMidWay(t *testing.T) {
	t.Parallel()
	_, envFile := startStack(t)
	var out strings.Builder
	if err := runRescore(context.Background(), []string{"-env", envFile}, &out); err != nil { // make demo-rescore's defaults
		t.Fatalf("rescore: %v\n%s", err, out.String())
	}
	text := out.String()
	m := regexp.MustCompile(`harvested, final cancelled: (\d+) ok, (\d+) cancelled, (\d+) refused, 0 failed, 0 expired; billed (\d+) prompt \+ (\d+) completion tokens`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no cancelled harvest in the output:\n%s", text)
	}
	ok, cancelled, refused, prompt := atoi(t, m[1]), atoi(t, m[2]), atoi(t, m[3]), atoi(t, m[4])
	if ok == 0 || cancelled == 0 || ok+cancelled+refused != 1000 || prompt == 0 {
		t.Errorf("outcomes %d ok, %d cancelled, %d refused, %d prompt tokens; want a cancel mid-way, the done items billed:\n%s", ok, cancelled, refused, prompt, text)
	}
	if !strings.Contains(text, fmt.Sprintf("%d ok", ok)) || !strings.Contains(text, "refused: 409 job_finished") {
		t.Errorf("the results or the second cancel are not shown:\n%s", text)
	}
	env, err := readEnv(envFile)
	if err != nil {
		t.Fatal(err)
	}
	speed, err := simSpeed(context.Background(), env["AOAISIM_URL"], env["AOAISIM_KEY"], ptr(600.0))
	if err != nil || speed != 600 {
		t.Errorf("the simulator's clock after the demo: ×%v, %v; want make run's ×600 back", speed, err)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func ptr[T any](v T) *T { return &v }

func TestLogTap_FileGetsAllConsoleTheWarnings(t *testing.T) {
	t.Parallel()
	lines := `{"level":"info","message":"invocation","function":"batch-poll"}` + "\n" +
		`{"level":"warn","message":"lease renewal failed","deployment":"gpt-4o-mini"}` + "\n" + `not json` + "\n"
	for _, verbose := range []bool{false, true} {
		var file, screen bytes.Buffer
		tap := &logTap{source: "handler", file: &file, console: &screen}
		if verbose {
			tap.verbose = zerolog.ConsoleWriter{Out: &screen, NoColor: true}
		}
		// Written in pieces that cut lines, as a pipe delivers them.
		for _, piece := range []string{lines[:10], lines[10:70], lines[70:]} {
			if _, err := tap.Write([]byte(piece)); err != nil {
				t.Fatal(err)
			}
		}
		if file.String() != lines {
			t.Errorf("verbose %v: the file holds %q, want every line", verbose, file.String())
		}
		got := screen.String()
		if !strings.Contains(got, "lease renewal failed") || strings.Contains(got, "{") {
			t.Errorf("verbose %v: console %q", verbose, got)
		}
		if verbose != strings.Contains(got, "invocation") || verbose != strings.Contains(got, "not json") {
			t.Errorf("verbose %v: console %q; want every line only when verbose", verbose, got)
		}
	}
}
