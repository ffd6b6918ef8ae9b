// Package rss measures resident set sizes for the benchmarks and tests that
// bound memory: a process's peak (Linux's VmHWM, which can be reset) and
// current resident set, read from /proc, and an exited child's peak from
// its rusage. Where there is no /proc the callers are skipped, not failed.
package rss

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
)

// Self is the pid that means this process.
const Self = 0

// Reset sets pid's peak resident set to its current one (Linux 4.0+,
// clear_refs 5), so that Peak measures from now on. It skips tb where that
// is not possible.
func Reset(tb testing.TB, pid int) {
	tb.Helper()
	if err := os.WriteFile(proc(pid)+"/clear_refs", []byte("5"), 0); err != nil {
		tb.Skipf("cannot reset the peak RSS: %v", err)
	}
}

// Peak is pid's peak resident set since it started or since the last
// Reset, in bytes.
func Peak(tb testing.TB, pid int) int64 { tb.Helper(); return field(tb, pid, "VmHWM") }

// Current is pid's resident set now, in bytes.
func Current(tb testing.TB, pid int) int64 { tb.Helper(); return field(tb, pid, "VmRSS") }

// Resident is Current for code that cannot skip a test, such as a goroutine
// sampling the resident set.
func Resident(pid int) (int64, error) { return read(pid, "VmRSS") }

// PeakExited is the peak resident set of a child process that has exited,
// in bytes, from its rusage; it skips tb where the system gives none.
func PeakExited(tb testing.TB, ps *os.ProcessState) int64 {
	tb.Helper()
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		tb.Skip("no rusage for the child process on this system")
	}
	return ru.Maxrss << 10 // Linux: kB
}

// MB is n bytes in megabytes (10⁶ bytes), the unit the figures use.
func MB(n int64) float64 { return float64(n) / 1e6 }

func proc(pid int) string {
	if pid == Self {
		return "/proc/self"
	}
	return "/proc/" + strconv.Itoa(pid)
}

// field reads a kB field of pid's /proc status, in bytes.
func field(tb testing.TB, pid int, name string) int64 {
	tb.Helper()
	n, err := read(pid, name)
	if err != nil {
		tb.Skipf("cannot read the RSS: %v", err)
	}
	return n
}

func read(pid int, name string) (int64, error) {
	data, err := os.ReadFile(proc(pid) + "/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte(name+":")); ok {
			kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s %q: %w", name, v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in %s/status", name, proc(pid))
}
