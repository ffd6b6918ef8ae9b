package devhost

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// worker runs the custom handler as the host does: the executable from
// host.json (relative to the app root), the app settings and the
// FUNCTIONS_CUSTOMHANDLER_* variables in its environment, readiness when
// GET / answers anything, and a restart whenever it dies.
type worker struct {
	app    *App
	logger zerolog.Logger
	// out receives the handler's stdout and stderr verbatim (its own
	// structured log lines), as the host captures them.
	out  io.Writer
	port int
	id   string

	mu    sync.Mutex
	ready chan struct{} // closed while the current process answers GET /
	pid   int           // the current process's id, 0 when none runs
}

// processID is the id of the handler process now running, or 0.
func (w *worker) processID() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pid
}

func (w *worker) setPID(pid int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pid = pid
}

func newWorker(app *App, logger zerolog.Logger, out io.Writer) (*worker, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return &worker{app: app, logger: logger, out: out, port: port, id: newID(), ready: make(chan struct{})}, nil
}

// baseURL is where the handler listens: the host always calls 127.0.0.1.
func (w *worker) baseURL() string { return "http://127.0.0.1:" + strconv.Itoa(w.port) }

// waitReady blocks until the handler answers GET / or ctx ends.
func (w *worker) waitReady(ctx context.Context) error {
	w.mu.Lock()
	ready := w.ready
	w.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("handler not ready: %w", ctx.Err())
	}
}

// run starts the handler and restarts it whenever it exits, with a backoff
// that resets once a process has stayed up, until ctx is done; then it
// sends SIGTERM and waits for a graceful exit.
func (w *worker) run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		started := time.Now()
		err := w.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(started) > 30*time.Second {
			backoff = 100 * time.Millisecond
		}
		w.logger.Error().Err(err).Dur("restart_in_ms", backoff).Msg("handler exited; restarting")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func (w *worker) runOnce(ctx context.Context) error {
	exe, dir := w.command()
	cmd := exec.Command(exe, w.expandArgs()...)
	cmd.Dir = dir
	cmd.Env = w.environ()
	cmd.Stdout, cmd.Stderr = w.out, w.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start handler %s: %w", exe, err)
	}
	w.setPID(cmd.Process.Pid)
	defer w.setPID(0)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	probeCtx, stopProbe := context.WithCancel(ctx)
	defer stopProbe()
	go w.probe(probeCtx, exited)

	select {
	case err := <-exited:
		w.notReady()
		return fmt.Errorf("handler exited: %w", err)
	case <-ctx.Done():
	}
	w.notReady()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	return nil
}

// probe polls GET / until any HTTP answer (only socket errors mean "not
// ready"), as the host does, within its 30 s initialization timeout.
func (w *worker) probe(ctx context.Context, exited <-chan error) {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for ctx.Err() == nil {
		res, err := client.Get(w.baseURL() + "/")
		if err == nil {
			res.Body.Close()
			w.mu.Lock()
			close(w.ready)
			w.mu.Unlock()
			w.logger.Info().Str("url", w.baseURL()).Msg("handler ready")
			return
		}
		if time.Now().After(deadline) {
			w.logger.Error().Err(err).Msg("handler did not answer GET / within 30 s")
			deadline = time.Now().Add(30 * time.Second)
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// notReady makes callers wait again until the next process answers.
func (w *worker) notReady() {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.ready:
		w.ready = make(chan struct{})
	default:
	}
}

// command resolves defaultExecutablePath against the app root (not the
// working directory); a path that is not a file there is a command on PATH.
func (w *worker) command() (exe, dir string) {
	exe = w.app.Host.Executable
	if !filepath.IsAbs(exe) {
		if p := filepath.Join(w.app.Root, exe); fileExists(p) {
			exe = p
		}
	}
	return exe, filepath.Join(w.app.Root, w.app.Host.WorkingDirectory)
}

// expandArgs expands %NAME% in arguments from app settings and environment.
func (w *worker) expandArgs() []string {
	re := regexp.MustCompile(`%([^%]+)%`)
	out := make([]string, len(w.app.Host.Arguments))
	for i, a := range w.app.Host.Arguments {
		out[i] = re.ReplaceAllStringFunc(a, func(m string) string { return w.app.setting(m[1 : len(m)-1]) })
	}
	return out
}

func (w *worker) environ() []string {
	env := os.Environ()
	for k, v := range w.app.Settings {
		env = append(env, k+"="+v)
	}
	port := strconv.Itoa(w.port)
	return append(env,
		"FUNCTIONS_CUSTOMHANDLER_PORT="+port,
		"FUNCTIONS_HTTPWORKER_PORT="+port,
		"FUNCTIONS_CUSTOMHANDLER_WORKER_ID="+w.id,
		"FUNCTIONS_HTTPWORKER_ID="+w.id,
		"FUNCTIONS_APP_ROOT_PATH="+w.app.Root,
	)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a port for the handler: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
