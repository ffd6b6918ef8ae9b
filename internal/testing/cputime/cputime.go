// Package cputime reads the CPU time a process has used (user and system),
// for the benchmarks that report work beside wall time: on a shared machine
// the wall time of a phase varies with the load, the CPU it takes much
// less. Where there is no /proc the callers are skipped, not failed.
package cputime

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Self is the pid that means this process.
const Self = 0

// clockTick is Linux's USER_HZ, the unit of /proc/<pid>/stat's times.
const clockTick = 10 * time.Millisecond

// Of is the CPU time pid has used so far, user and system. It skips tb
// where that cannot be read.
func Of(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	d, err := read(pid)
	if err != nil {
		tb.Skipf("cannot read the CPU time: %v", err)
	}
	return d
}

func read(pid int) (time.Duration, error) {
	p := "/proc/self/stat"
	if pid != Self {
		p = "/proc/" + strconv.Itoa(pid) + "/stat"
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: the fields are
	// counted after its closing one (utime and stime are fields 14 and 15).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("%s: unexpected format", p)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", p, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// LoadAverage is the system's load average over the last minute, as
// /proc/loadavg gives it ("?" where it cannot be read): said beside every
// time measured on a shared machine.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}
