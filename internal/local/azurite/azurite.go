// Package azurite starts a private Azurite (Blob, Queue and Table
// Storage emulator) for a test, on free loopback ports in a temporary folder,
// and stops it when the test ends. Storage code is tested against this real
// server rather than against mocks, and `go test ./...` needs nothing running.
//
// The Azurite executable is the one pinned in the repository's package.json
// and installed by `make test` (npm ci). AZURITE_BIN overrides the lookup.
package azurite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// names numbers the names Suffix gives in this process.
var names atomic.Int64

// Suffix is a name part no other test of the process gets, letters-free
// digits that table and container names both allow: tests that share an
// Azurite keep apart by the table and container names they make with it.
func Suffix() string {
	return fmt.Sprintf("%d%d", time.Now().UnixNano()%1_000_000_000, names.Add(1))
}

// Account and Key are Azurite's well-known development account credentials.
const (
	Account = "devstoreaccount1"
	Key     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Azurite is a running emulator. Its endpoints include the account path, as
// Azurite's path-style URLs require (http://127.0.0.1:port/devstoreaccount1).
type Azurite struct {
	BlobURL  string
	QueueURL string
	TableURL string
	// Dir is the workspace folder; a restart on the same Dir keeps the data.
	Dir string

	cmd  *exec.Cmd
	done chan struct{}
}

// ConnectionString returns a storage connection string for all three services.
func (a *Azurite) ConnectionString() string {
	return fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;QueueEndpoint=%s;TableEndpoint=%s;",
		Account, Key, a.BlobURL, a.QueueURL, a.TableURL)
}

// Start starts an Azurite that keeps its data in memory (StartInMemory) and
// stops it at the end of the test. It fails the test if Azurite cannot be
// found or does not start. A test that restarts Azurite on the same data
// uses StartIn.
func Start(tb testing.TB) *Azurite {
	tb.Helper()
	return StartInMemory(tb)
}

// StartIn starts Azurite on the workspace folder dir, so that a test can stop
// one instance and start another on the same data.
func StartIn(tb testing.TB, dir string) *Azurite {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		tb.Fatalf("azurite: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := Launch(ctx, bin, dir, io.Discard)
	if err != nil {
		tb.Fatalf("azurite: %v", err)
	}
	tb.Cleanup(a.Stop)
	return a
}

// StartInMemory starts an Azurite that keeps its data in memory only
// (--inMemoryPersistence) and stops it at the end of the test. Azurite
// otherwise writes every blob to a file and saves its whole table database
// to disk every few seconds, work that grows with every row a test
// package writes and slows a table of hundreds of thousands of rows to a
// crawl; what a test sees of Blob and Table Storage is the same.
func StartInMemory(tb testing.TB) *Azurite {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		tb.Fatalf("azurite: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := launch(ctx, bin, tb.TempDir(), io.Discard, true)
	if err != nil {
		tb.Fatalf("azurite: %v", err)
	}
	tb.Cleanup(a.Stop)
	return a
}

// listening matches Azurite's start-up lines, which carry the bound port.
var listening = regexp.MustCompile(`Azurite (Blob|Queue|Table) service is successfully listening at (http://\S+)`)

// Launch starts Azurite from bin on free loopback ports with its workspace in
// dir and waits until all three services listen. Azurite's further output goes
// to logw. Launch is what `make run` and the tests share.
func Launch(ctx context.Context, bin, dir string, logw io.Writer) (*Azurite, error) {
	return launch(ctx, bin, dir, logw, false)
}

// launch is Launch; with inMemory the data is kept in memory only, and dir
// is only the process's working folder.
func launch(ctx context.Context, bin, dir string, logw io.Writer, inMemory bool) (*Azurite, error) {
	where := []string{"--location", dir}
	if inMemory {
		where = []string{"--inMemoryPersistence"} // Azurite refuses it with --location
	}
	cmd := exec.Command(bin, append(where,
		"--blobHost", "127.0.0.1", "--blobPort", "0",
		"--queueHost", "127.0.0.1", "--queuePort", "0",
		"--tableHost", "127.0.0.1", "--tablePort", "0",
		"--disableTelemetry", "--skipApiVersionCheck", "--loose", "--silent",
	)...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("pipe azurite output: %w", err)
	}
	cmd.Stderr = logw
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	a := &Azurite{Dir: dir, cmd: cmd, done: make(chan struct{})}
	urls := make(chan [2]string, 3)
	go func() {
		defer close(urls)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				urls <- [2]string{m[1], m[2] + "/" + Account}
				continue
			}
			fmt.Fprintln(logw, sc.Text())
		}
	}()
	go func() { _ = cmd.Wait(); close(a.done) }()

	for a.BlobURL == "" || a.QueueURL == "" || a.TableURL == "" {
		select {
		case u, ok := <-urls:
			if !ok {
				a.Stop()
				return nil, errors.New("azurite exited before all services listened")
			}
			switch u[0] {
			case "Blob":
				a.BlobURL = u[1]
			case "Queue":
				a.QueueURL = u[1]
			case "Table":
				a.TableURL = u[1]
			}
		case <-ctx.Done():
			a.Stop()
			return nil, fmt.Errorf("wait for azurite to listen: %w", ctx.Err())
		}
	}
	return a, nil
}

// PID is the emulator process's id (for a benchmark that reports the CPU
// time Azurite spent).
func (a *Azurite) PID() int { return a.cmd.Process.Pid }

// Stop terminates Azurite and waits for it to exit. It is safe to call twice.
func (a *Azurite) Stop() {
	select {
	case <-a.done:
		return
	default:
	}
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		<-a.done
	}
}

// Binary locates the pinned Azurite executable: AZURITE_BIN if set, otherwise
// node_modules/.bin/azurite in the nearest folder above the working directory
// that has one (the repository root, where `npm ci` installs it).
func Binary() (string, error) {
	if bin := os.Getenv("AZURITE_BIN"); bin != "" {
		return bin, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find azurite: %w", err)
	}
	for {
		bin := filepath.Join(dir, "node_modules", ".bin", "azurite")
		if _, err := os.Stat(bin); err == nil {
			return bin, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("node_modules/.bin/azurite not found above the working directory: run `make test` (it installs the pinned Azurite with npm ci) or set AZURITE_BIN")
		}
		dir = parent
	}
}

// Name returns a storage-safe unique name (lowercase letters, digits and
// hyphens, 3–63 characters) derived from the test's name, for containers,
// queues and tables (tables take no hyphens: use TableName).
func Name(tb testing.TB) string {
	tb.Helper()
	var b strings.Builder
	for _, r := range strings.ToLower(tb.Name()) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(regexp.MustCompile(`-+`).ReplaceAllString(b.String(), "-"), "-")
	suffix := fmt.Sprintf("-%d", time.Now().UnixNano()%1_000_000)
	if len(s) > 63-len(suffix) {
		s = s[:63-len(suffix)]
	}
	return strings.Trim(s, "-") + suffix
}
