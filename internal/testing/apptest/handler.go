package apptest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// module is the module whose handler and app files a Stack runs.
const module = "github.com/offpath/offpath"

// buildPrefix starts the name of the temporary folder of a test binary's
// handler build; the process id follows, so that a later binary can tell a
// leftover from a build still in use.
const buildPrefix = "offpath-apptest-"

// built is the handler built for this test binary. A test binary is one
// process, so one build serves all its stacks.
//
//nolint:gochecknoglobals // one build per test binary, shared by its tests
var built struct {
	once sync.Once
	dir  string // the temporary folder holding the binary
	path string
	err  error
}

// handlerBinary builds the handler once per test binary and returns its path.
func handlerBinary(tb testing.TB) string {
	tb.Helper()
	built.once.Do(func() {
		root, err := repoRoot()
		if err != nil {
			built.err = err
			return
		}
		removeLeftovers()
		if built.dir, err = os.MkdirTemp("", fmt.Sprintf("%s%d-", buildPrefix, os.Getpid())); err != nil {
			built.err = fmt.Errorf("handler build folder: %w", err)
			return
		}
		built.path = filepath.Join(built.dir, "handler")
		cmd := exec.Command("go", "build", "-o", built.path, module+"/cmd/handler")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build %s/handler: %w\n%s", module, err, out)
		}
	})
	if built.err != nil {
		tb.Fatalf("build the handler: %v", built.err)
	}
	return built.path
}

// Cleanup removes the handler built for this test binary. Call it from
// TestMain after m.Run, when no stack runs any more.
func Cleanup() {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}

// removeLeftovers removes the handler builds of test binaries that have
// exited without calling Cleanup.
func removeLeftovers() {
	entries, err := os.ReadDir(os.TempDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), buildPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(os.TempDir(), e.Name()))
	}
}

// alive reports whether process pid exists (or cannot be checked).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// repoRoot is the folder of the module's go.mod, found by walking up from
// the working directory (a test runs in its package's folder).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the repository: %w", err)
	}
	for {
		if isModuleRoot(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", module)
		}
		dir = parent
	}
}

// isModuleRoot reports whether the go.mod at path declares module.
func isModuleRoot(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(name), `"`) == module
		}
	}
	return false
}
