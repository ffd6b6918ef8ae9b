package ncrontab

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// The six fields, in the order they appear in an expression.
const (
	second = iota
	minute
	hour
	day
	month
	weekday
	numFields
)

// fieldSpec describes one field: its name in errors, its range, and for
// month and day-of-week the English names NCrontab accepts.
type fieldSpec struct {
	name     string
	min, max int
	names    []string
}

// spec returns the description of field f. It is a function rather than a
// package-level table so that the package holds no mutable state.
func spec(f int) fieldSpec {
	switch f {
	case second:
		return fieldSpec{name: "second", min: 0, max: 59}
	case minute:
		return fieldSpec{name: "minute", min: 0, max: 59}
	case hour:
		return fieldSpec{name: "hour", min: 0, max: 23}
	case day:
		return fieldSpec{name: "day", min: 1, max: 31}
	case month:
		return fieldSpec{name: "month", min: 1, max: 12, names: []string{
			"January", "February", "March", "April", "May", "June", "July",
			"August", "September", "October", "November", "December"}}
	default:
		return fieldSpec{name: "day-of-week", min: 0, max: 6, names: []string{
			"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}}
	}
}

// FieldError reports a field of a cron expression that does not parse.
type FieldError struct {
	Expr   string // the whole expression
	Field  string // "second", "minute", "hour", "day", "month" or "day-of-week"
	Value  string // the field's text, or the part of it at fault
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("schedule %q: %s field %q: %s", e.Expr, e.Field, e.Value, e.Reason)
}

func parseCron(expr string, parts []string) (Schedule, error) {
	switch {
	case len(parts) == 5:
		return Schedule{}, fmt.Errorf("schedule %q has 5 fields, but Azure Functions needs 6, {second} {minute} {hour} {day} {month} {day-of-week}: add a seconds field, e.g. %q", expr, "0 "+strings.Join(parts, " "))
	case len(parts) != numFields:
		return Schedule{}, fmt.Errorf("schedule %q has %d fields, want 6: {second} {minute} {hour} {day} {month} {day-of-week}, or a TimeSpan such as 00:05:00", expr, len(parts))
	}
	s := Schedule{kind: Cron, expr: expr}
	for f, text := range parts {
		set, err := parseField(spec(f), text)
		if err != nil {
			err.Expr = expr
			return Schedule{}, err
		}
		s.fields[f] = set
	}
	if !s.dayExists() {
		return Schedule{}, &FieldError{Expr: expr, Field: "day", Value: parts[day],
			Reason: fmt.Sprintf("no such day in month(s) %q, so the schedule would never fire", parts[month])}
	}
	return s, nil
}

// dayExists reports whether some allowed day of the month exists in some
// allowed month (day 30 never comes in February). Any date that exists falls
// on every weekday within the 400-year Gregorian cycle, so the day-of-week
// cannot make a schedule impossible.
func (s Schedule) dayExists() bool {
	for m := 1; m <= 12; m++ {
		if s.fields[month]&(1<<m) == 0 {
			continue
		}
		last := daysIn(2000, time.Month(m)) // a leap year: February 29 exists
		if s.fields[day]&(uint64(1)<<(last+1)-1) != 0 {
			return true
		}
	}
	return false
}

// parseField parses one field: a comma-separated list of "*", "v", "a-b",
// each optionally followed by "/step", and "v/step" (v to the maximum).
func parseField(fs fieldSpec, text string) (uint64, *FieldError) {
	fail := func(value, format string, args ...any) (uint64, *FieldError) {
		return 0, &FieldError{Field: fs.name, Value: value, Reason: fmt.Sprintf(format, args...)}
	}
	var set uint64
	for _, item := range strings.Split(text, ",") {
		if item == "" {
			return fail(text, "empty list element")
		}
		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || !isDigits(stepText) {
				return fail(item, "step %q is not a positive whole number (NCrontab would read /0 as /1)", stepText)
			}
			step = n
		}
		lo, hi := fs.min, fs.max
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err string
			if lo, err = fs.value(a); err != "" {
				return fail(item, "%s", err)
			}
			if hi, err = fs.value(b); err != "" {
				return fail(item, "%s", err)
			}
			if lo > hi {
				return fail(item, "range %s-%s runs backwards (NCrontab would silently swap it to %s-%s)", a, b, b, a)
			}
		default:
			v, err := fs.value(rng)
			if err != "" {
				return fail(item, "%s", err)
			}
			lo = v
			if !hasStep {
				hi = v
			}
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

// value parses a number or, for month and day-of-week, a name. Like NCrontab
// it accepts any case-insensitive prefix of the English name, taking the
// first in calendar order ("JAN", "january", "Tu"; "M" is March, "S" Sunday).
// It returns a reason instead of an error so the caller can name the field.
func (fs fieldSpec) value(text string) (int, string) {
	if text == "" {
		return 0, "missing value"
	}
	if isDigits(text) {
		v, err := strconv.Atoi(text)
		if err != nil || v < fs.min || v > fs.max {
			if fs.name == "day-of-week" && v == 7 {
				return 0, "7 is out of range 0-6: NCrontab does not read 7 as Sunday, use 0 or SUN"
			}
			return 0, fmt.Sprintf("%s is out of range %d-%d", text, fs.min, fs.max)
		}
		return v, ""
	}
	for i, name := range fs.names {
		if len(text) <= len(name) && strings.EqualFold(name[:len(text)], text) {
			return fs.min + i, ""
		}
	}
	if fs.names != nil {
		return 0, fmt.Sprintf("%q is neither a number %d-%d nor a %s name such as %s", text, fs.min, fs.max, fs.name, strings.ToUpper(fs.names[0][:3]))
	}
	return 0, fmt.Sprintf("%q is not a number %d-%d", text, fs.min, fs.max)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// nextCron finds the first whole second after t (UTC) that the schedule
// allows. It never steps one second or one minute at a time: each field that
// does not match jumps straight to the field's next allowed value, and
// months outside the schedule are skipped whole. Like NCrontab, a time must
// match both the day of the month and the day of the week.
func (s Schedule) nextCron(t time.Time) time.Time {
	t = t.Truncate(time.Second).Add(time.Second)
	limit := t.Year() + 401
	for t.Year() <= limit {
		y, mo, d := t.Date()
		h, mi, sec := t.Clock()
		if v, ok := next(s.fields[month], int(mo)); !ok {
			t = date(y+1, first(s.fields[month]), 1, 0, 0, 0)
			continue
		} else if v != int(mo) {
			t = date(y, v, 1, 0, 0, 0)
			continue
		}
		if v, ok := next(s.fields[day], d); !ok || v > daysIn(y, mo) {
			t = date(y, int(mo)+1, 1, 0, 0, 0)
			continue
		} else if v != d {
			t = date(y, int(mo), v, 0, 0, 0)
			continue
		}
		if s.fields[weekday]&(1<<int(t.Weekday())) == 0 {
			t = date(y, int(mo), d+1, 0, 0, 0)
			continue
		}
		if v, ok := next(s.fields[hour], h); !ok {
			t = date(y, int(mo), d+1, 0, 0, 0)
			continue
		} else if v != h {
			t = date(y, int(mo), d, v, 0, 0)
			continue
		}
		if v, ok := next(s.fields[minute], mi); !ok {
			t = date(y, int(mo), d, h+1, 0, 0)
			continue
		} else if v != mi {
			t = date(y, int(mo), d, h, v, 0)
			continue
		}
		if v, ok := next(s.fields[second], sec); !ok {
			t = date(y, int(mo), d, h, mi+1, 0)
			continue
		} else if v != sec {
			t = date(y, int(mo), d, h, mi, v)
			continue
		}
		return t
	}
	return time.Time{}
}

// matches reports whether t (whole seconds, UTC) is an occurrence.
func (s Schedule) matches(t time.Time) bool {
	t = t.UTC()
	vals := [numFields]int{t.Second(), t.Minute(), t.Hour(), t.Day(), int(t.Month()), int(t.Weekday())}
	for f, v := range vals {
		if s.fields[f]&(1<<v) == 0 {
			return false
		}
	}
	return t.Nanosecond() == 0
}

// next returns the smallest value >= v in set.
func next(set uint64, v int) (int, bool) {
	rest := set >> v << v
	if rest == 0 {
		return 0, false
	}
	return bits.TrailingZeros64(rest), true
}

func first(set uint64) int { return bits.TrailingZeros64(set) }

// date builds a UTC time, normalising overflow (day 32 is the next month).
func date(y, mo, d, h, mi, sec int) time.Time {
	return time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC)
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
