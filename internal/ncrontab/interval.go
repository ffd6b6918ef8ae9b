package ncrontab

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseInterval parses a schedule that is a TimeSpan (see ParseTimeSpan).
func parseInterval(expr, text string) (Schedule, error) {
	d, err := ParseTimeSpan(text)
	if err != nil {
		return Schedule{}, fmt.Errorf("schedule %q: %w", expr, err)
	}
	return Schedule{kind: Interval, expr: expr, every: d}, nil
}

// ParseTimeSpan parses the TimeSpan form "[d.]hh:mm[:ss[.fffffff]]" as the
// Functions host reads it (with .NET's TimeSpan parsing) in timer schedules
// and host.json's functionTimeout. hh is 0-23, mm and ss 0-59, the fraction
// up to seven digits (100 ns ticks). Forms .NET reads otherwise than they
// look are refused with a hint: hours above 23 (.NET reads "25:00:00" as
// 25 days), a bare number (.NET reads "30" as 30 days); so is a negative or
// zero span, which would fire without pause.
func ParseTimeSpan(text string) (time.Duration, error) {
	fail := func(format string, args ...any) (time.Duration, error) {
		return 0, fmt.Errorf("%s; a TimeSpan looks like hh:mm:ss or d.hh:mm:ss, e.g. 00:05:00", fmt.Sprintf(format, args...))
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
	if h, err := number(parts[0], 10675199); err == "" && h > 23 && days == 0 {
		return fail("hours %q: above 23, which the host reads as %d days, not %d hours; write %d.%02d:%s for %d hours",
			parts[0], h, h, h/24, h%24, strings.Join(parts[1:], ":"), h)
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
	return d, nil
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
