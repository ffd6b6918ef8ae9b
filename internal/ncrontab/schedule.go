// Package ncrontab parses the timer schedules of Azure Functions and computes
// their next occurrence, so that the dev host fires timer functions when the
// real host would.
//
// The Functions host accepts two forms in a timer trigger's "schedule":
//
//   - an NCRONTAB expression with six fields,
//     "{second} {minute} {hour} {day} {month} {day-of-week}", evaluated the way
//     the NCrontab library (atifaziz/NCrontab, which the host uses) evaluates it;
//   - a TimeSpan, "[d.]hh:mm[:ss[.fffffff]]", a fixed interval between runs,
//     which the host accepts on App Service and Premium plans only.
//
// Where NCrontab quietly accepts something that is almost certainly a mistake
// (a reversed range such as "5-1", which it swaps, a step of 0, which it reads
// as 1, or a day that never comes such as "30 2"), Parse rejects it with an
// error, so the mistake shows up on a development machine rather than as a
// timer that never or always fires in Azure. Every other accepted expression
// means what it means to NCrontab.
//
// Schedules are evaluated in UTC. The host evaluates them in WEBSITE_TIME_ZONE
// when that is set (not available on Linux Consumption); the dev host does not
// model time zones or daylight saving.
package ncrontab

import (
	"strings"
	"time"
)

// Kind tells the two forms of schedule apart.
type Kind int

// The kinds of schedule. The zero Kind belongs to the zero Schedule.
const (
	// Cron is an NCRONTAB expression.
	Cron Kind = iota + 1
	// Interval is a TimeSpan: a fixed period between occurrences.
	Interval
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case Cron:
		return "cron"
	case Interval:
		return "interval"
	default:
		return "none"
	}
}

// Schedule is a parsed timer schedule. It is an immutable value, safe to copy
// and to use from several goroutines. The zero Schedule never fires.
type Schedule struct {
	kind   Kind
	expr   string
	fields [numFields]uint64 // bit v set = value v allowed, one set per field
	every  time.Duration
}

// Parse parses a timer schedule: a six-field NCRONTAB expression or a
// TimeSpan interval. A five-field (classic cron) expression is an error: the
// host rejects it on some plans, so it is rejected here everywhere.
func Parse(expr string) (Schedule, error) {
	parts := strings.Fields(expr)
	if len(parts) == 1 && strings.Contains(parts[0], ":") {
		return parseInterval(expr, parts[0])
	}
	return parseCron(expr, parts)
}

// Kind reports whether s is a Cron or an Interval schedule.
func (s Schedule) Kind() Kind { return s.kind }

// Interval returns the period of an Interval schedule and 0 for the others.
func (s Schedule) Interval() time.Duration { return s.every }

// String returns the expression s was parsed from.
func (s Schedule) String() string { return s.expr }

// IsZero reports whether s is the zero Schedule.
func (s Schedule) IsZero() bool { return s.kind == 0 }

// Next returns the first occurrence of s strictly after after, in UTC. An
// Interval schedule occurs one period after after (the host's
// ConstantSchedule), whatever the time of day. A Cron schedule occurs on
// whole seconds. Next returns the zero time for the zero Schedule and when a
// Cron schedule has no occurrence in the 401 years after after.
func (s Schedule) Next(after time.Time) time.Time {
	switch s.kind {
	case Interval:
		return after.UTC().Add(s.every)
	case Cron:
		return s.nextCron(after.UTC())
	default:
		return time.Time{}
	}
}
