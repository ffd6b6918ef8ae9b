package ncrontab

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseInterval parses the TimeSpan form "[d.]hh:mm[:ss[.fffffff]]" that the
// host accepts (with .NET's TimeSpan.TryParse) when a schedule is not a cron
// expression. hh is 0-23, mm and ss 0-59, the fraction up to seven digits
// (100 ns ticks). Two forms .NET also accepts are refused: a bare number,
// which .NET reads as days ("30" is 30 days, rarely what was meant), and a
// negative or zero interval, which would fire without pause.
func parseInterval(expr, text string) (Schedule, error) {
	fail := func(format string, args ...any) (Schedule, error) {
		return Schedule{}, fmt.Errorf("schedule %q: %s; a TimeSpan looks like hh:mm:ss or d.hh:mm:ss, e.g. 00:05:00", expr, fmt.Sprintf(format, args...))
	}
	var days int
	clock := text
	// A dot before the first colon separates days ("1.02:00:00"); a dot after
	// the seconds starts the fraction.
	if dot := strings.IndexByte(text, '.'); dot >= 0 && dot < strings.IndexByte(text, ':') {
		n, err := number(text[:dot], 10675199) // TimeSpan.MaxValue is 10675199 days
		if err != "" {
			return fail("days %q: %s", text[:dot], err)
		}
		days, clock = n, text[dot+1:]
	}
	var frac time.Duration
	parts := strings.Split(clock, ":")
	if len(parts) == 3 {
		if sec, f, ok := strings.Cut(parts[2], "."); ok {
			if f == "" || len(f) > 7 || !isDigits(f) {
				return fail("fraction %q is not 1 to 7 digits", f)
			}
			n, _ := strconv.Atoi(f + strings.Repeat("0", 7-len(f)))
			frac = time.Duration(n) * 100 * time.Nanosecond
			parts[2] = sec
		}
	}
	if len(parts) < 2 || len(parts) > 3 {
		return fail("%q is not hh:mm or hh:mm:ss", clock)
	}
	limits := []int{23, 59, 59}
	units := []time.Duration{time.Hour, time.Minute, time.Second}
	names := []string{"hours", "minutes", "seconds"}
	d := time.Duration(days)*24*time.Hour + frac
	for i, p := range parts {
		n, err := number(p, limits[i])
		if err != "" {
			return fail("%s %q: %s", names[i], p, err)
		}
		d += time.Duration(n) * units[i]
	}
	if d <= 0 {
		return fail("the interval is zero")
	}
	return Schedule{kind: Interval, expr: expr, every: d}, nil
}

// number parses a non-negative whole number no larger than max.
func number(s string, max int) (int, string) {
	if !isDigits(s) {
		return 0, "not a whole number"
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > max {
		return 0, fmt.Sprintf("above %d", max)
	}
	return n, ""
}
