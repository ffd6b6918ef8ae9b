package ncrontab

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestSchedule_Next(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		expr  string
		after string
		want  []string // successive occurrences
	}{
		{"every five minutes", "0 */5 * * * *", "2025-03-01T06:00:00Z",
			[]string{"2025-03-01T06:05:00Z", "2025-03-01T06:10:00Z"}},
		{"every five minutes from mid-interval", "0 */5 * * * *", "2025-03-01T06:07:31.5Z",
			[]string{"2025-03-01T06:10:00Z"}},
		{"daily at seven", "0 0 7 * * *", "2025-03-01T07:00:00Z",
			[]string{"2025-03-02T07:00:00Z", "2025-03-03T07:00:00Z"}},
		{"daily at seven, same day", "0 0 7 * * *", "2025-03-01T06:59:59.999Z",
			[]string{"2025-03-01T07:00:00Z"}},
		{"weekdays at 9:30 over a weekend", "0 30 9 * * 1-5", "2025-02-28T09:30:00Z", // a Friday
			[]string{"2025-03-03T09:30:00Z", "2025-03-04T09:30:00Z"}},
		{"every ten seconds", "*/10 * * * * *", "2025-03-01T23:59:55Z",
			[]string{"2025-03-02T00:00:00Z", "2025-03-02T00:00:10Z"}},
		{"new year", "0 0 0 1 1 *", "2025-01-01T00:00:00Z",
			[]string{"2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"}},
		{"leap day", "0 0 0 29 2 *", "2025-01-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"leap day skips 2100", "0 0 0 29 2 *", "2096-03-01T00:00:00Z",
			[]string{"2104-02-29T00:00:00Z"}},
		{"month names", "0 0 12 1 JAN,jul *", "2025-02-01T00:00:00Z",
			[]string{"2025-07-01T12:00:00Z", "2026-01-01T12:00:00Z"}},
		{"full month name", "0 0 0 1 September *", "2025-01-01T00:00:00Z",
			[]string{"2025-09-01T00:00:00Z"}},
		{"day names range", "0 0 8 * * MON-FRI", "2025-03-07T08:00:00Z", // a Friday
			[]string{"2025-03-10T08:00:00Z"}},
		{"day name lower case", "0 0 8 * * sun", "2025-03-03T00:00:00Z",
			[]string{"2025-03-09T08:00:00Z"}},
		{"day 31 skips short months", "0 0 0 31 * *", "2025-01-31T00:00:00Z",
			[]string{"2025-03-31T00:00:00Z", "2025-05-31T00:00:00Z", "2025-07-31T00:00:00Z", "2025-08-31T00:00:00Z"}},
		{"day 30 skips February", "0 0 0 30 * *", "2025-01-30T00:00:00Z",
			[]string{"2025-03-30T00:00:00Z"}},
		{"day and weekday must both match", "0 0 0 13 * FRI", "2025-01-01T00:00:00Z",
			[]string{"2025-06-13T00:00:00Z", "2026-02-13T00:00:00Z"}},
		{"value with step runs to the maximum", "0 50/5 * * * *", "2025-03-01T06:00:00Z",
			[]string{"2025-03-01T06:50:00Z", "2025-03-01T06:55:00Z", "2025-03-01T07:50:00Z"}},
		{"range with step", "0 0 8-18/5 * * *", "2025-03-01T09:00:00Z",
			[]string{"2025-03-01T13:00:00Z", "2025-03-01T18:00:00Z", "2025-03-02T08:00:00Z"}},
		{"list", "0 15,45 * * * *", "2025-03-01T06:15:00Z",
			[]string{"2025-03-01T06:45:00Z", "2025-03-01T07:15:00Z"}},
		{"every second", "* * * * * *", "2025-12-31T23:59:59Z",
			[]string{"2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"}},
		{"quarterly", "0 0 0 1 */3 *", "2025-01-01T00:00:00Z",
			[]string{"2025-04-01T00:00:00Z", "2025-07-01T00:00:00Z", "2025-10-01T00:00:00Z", "2026-01-01T00:00:00Z"}},
		{"last seconds of the year", "59 59 23 31 12 *", "2025-06-01T00:00:00Z",
			[]string{"2025-12-31T23:59:59Z", "2026-12-31T23:59:59Z"}},
		{"leap day on a Monday", "0 0 0 29 FEB MON", "2025-01-01T00:00:00Z",
			[]string{"2044-02-29T00:00:00Z"}},
		{"non-UTC input", "0 0 7 * * *", "2025-03-01T08:30:00+02:00", // 06:30Z
			[]string{"2025-03-01T07:00:00Z"}},
		{"interval", "00:05:00", "2025-03-01T06:00:00.25Z",
			[]string{"2025-03-01T06:05:00.25Z", "2025-03-01T06:10:00.25Z"}},
		{"interval with days and fraction", "1.02:00:00.5", "2025-03-01T00:00:00Z",
			[]string{"2025-03-02T02:00:00.5Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.expr)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.expr, err)
			}
			at := utc(tt.after)
			for i, w := range tt.want {
				got := s.Next(at)
				if !got.Equal(utc(w)) || got.Location() != time.UTC {
					t.Fatalf("Parse(%q).Next(%s) #%d = %s, want %s", tt.expr, at.Format(time.RFC3339Nano), i+1, got.Format(time.RFC3339Nano), w)
				}
				at = got
			}
		})
	}
}

func TestParse_Invalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		expr  string
		field string   // FieldError.Field, "" if not a FieldError
		want  []string // substrings of the message
	}{
		{"five fields", "*/5 * * * *", "", []string{"5 fields", "6", `"0 */5 * * * *"`}},
		{"seven fields", "0 0 0 1 1 * 2025", "", []string{"7 fields"}},
		{"empty", "", "", []string{"0 fields"}},
		{"second too big", "60 * * * * *", "second", []string{`"60"`, "0-59"}},
		{"minute too big", "0 61 * * * *", "minute", []string{"61", "0-59"}},
		{"hour too big", "0 0 24 * * *", "hour", []string{"24", "0-23"}},
		{"day zero", "0 0 0 0 * *", "day", []string{"0", "1-31"}},
		{"month 13", "0 0 0 1 13 *", "month", []string{"13", "1-12"}},
		{"weekday 7", "0 0 0 * * 7", "day-of-week", []string{"7", "SUN"}},
		{"bad month name", "0 0 0 1 JANX *", "month", []string{`"JANX"`, "JAN"}},
		{"bad day name", "0 0 0 * * FUN", "day-of-week", []string{`"FUN"`}},
		{"name in a numeric field", "0 0 MON * * *", "hour", []string{`"MON"`}},
		{"step zero", "*/0 * * * * *", "second", []string{"/0"}},
		{"step not a number", "*/x * * * * *", "second", []string{`"x"`}},
		{"step signed", "*/+5 * * * * *", "second", []string{`"+5"`}},
		{"step empty", "0 */ * * * *", "minute", []string{`""`}},
		{"reversed range", "0 0 0 * * 5-1", "day-of-week", []string{"backwards", "5-1"}},
		{"reversed names", "0 0 0 * * FRI-MON", "day-of-week", []string{"backwards"}},
		{"empty list element", "0 1,,2 * * * *", "minute", []string{"empty"}},
		{"trailing comma", "0 1, * * * *", "minute", []string{"empty"}},
		{"negative", "0 -5 * * * *", "minute", []string{"missing"}},
		{"open range", "0 5- * * * *", "minute", []string{"missing"}},
		{"double range", "0 1-2-3 * * * *", "minute", []string{`"2-3"`}},
		{"star range", "0 *-5 * * * *", "minute", []string{`"*"`}},
		{"huge number", "0 99999999999999999999 * * * *", "minute", []string{"out of range"}},
		{"question mark", "0 0 0 ? * *", "day", []string{`"?"`}},
		{"last-day syntax", "0 0 0 L * *", "day", []string{`"L"`}},
		{"february 30", "0 0 0 30 2 *", "day", []string{"never fire"}},
		{"april 31", "0 0 0 31 APR *", "day", []string{"never fire"}},
		{"31 in short months", "0 0 0 31 2,4,6,9,11 *", "day", []string{"never fire"}},
		{"interval zero", "00:00:00", "", []string{"zero"}},
		{"interval hours", "24:00:00", "", []string{"hours", "23"}},
		{"interval hours the host reads as days", "25:00:00", "", []string{"25 days", "1.01:00:00 for 25 hours"}},
		{"interval minutes", "00:60:00", "", []string{"minutes"}},
		{"interval seconds", "00:00:61", "", []string{"seconds"}},
		{"interval fraction", "00:00:01.12345678", "", []string{"fraction"}},
		{"interval too many parts", "00:00:00:01", "", []string{"hh:mm"}},
		{"interval negative", "-00:05:00", "", []string{"hours"}},
		{"interval bad days", "x.00:05:00", "", []string{"days"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.expr)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", tt.expr, s)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse(%q) error %q does not mention %q", tt.expr, err, w)
				}
			}
			var fe *FieldError
			if errors.As(err, &fe) != (tt.field != "") || (fe != nil && fe.Field != tt.field) {
				t.Errorf("Parse(%q) error %#v, want a FieldError for field %q", tt.expr, err, tt.field)
			}
			if fe != nil && !strings.Contains(err.Error(), tt.expr) {
				t.Errorf("Parse(%q) error %q does not quote the expression", tt.expr, err)
			}
		})
	}
}

func TestParse_AcceptsWhatNCrontabAccepts(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{
		"0 0 0 * * 0",        // Sunday as 0
		"0 0 0 * * Tu",       // any prefix of the name
		"0 0 0 1 M *",        // "M" is March, the first month starting with M
		"0 0 0 * * Saturday", // full names
		"00 05 07 01 01 *",   // leading zeros
		"0  0   7 * * *",     // repeated spaces
		"5/15 * * * * *",     // value with a step
		"0 0 0 1-31/2 JAN-DEC *",
	} {
		if _, err := Parse(expr); err != nil {
			t.Errorf("Parse(%q) error: %v", expr, err)
		}
	}
	s, _ := Parse("0 0 0 1 M *")
	if got := s.Next(utc("2025-01-01T00:00:00Z")); !got.Equal(utc("2025-03-01T00:00:00Z")) {
		t.Errorf(`"M" as month: Next = %s, want March 1st`, got)
	}
}

func TestSchedule_KindAndString(t *testing.T) {
	t.Parallel()
	c, _ := Parse("0 */5 * * * *")
	i, _ := Parse("01:30:00")
	var zero Schedule
	if c.Kind() != Cron || i.Kind() != Interval || !zero.IsZero() || zero.Kind().String() != "none" {
		t.Fatalf("kinds: %v %v %v", c.Kind(), i.Kind(), zero.Kind())
	}
	if c.String() != "0 */5 * * * *" || i.Interval() != 90*time.Minute || c.Interval() != 0 {
		t.Fatalf("String/Interval: %q %v %v", c, i.Interval(), c.Interval())
	}
	if !zero.Next(time.Now()).IsZero() {
		t.Fatal("zero Schedule fired")
	}
}

// TestSchedule_NextMatchesBruteForce checks Next against a second-by-second
// search on random schedules that fire often enough to search exhaustively.
func TestSchedule_NextMatchesBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(max int, names ...string) string {
		switch rng.IntN(5) {
		case 0:
			return "*"
		case 1:
			return "*/" + strconv.Itoa(1+rng.IntN(max))
		case 2:
			a := rng.IntN(max)
			return strconv.Itoa(a) + "-" + strconv.Itoa(a+rng.IntN(max-a+1))
		case 3:
			return strconv.Itoa(rng.IntN(max)) + "," + strconv.Itoa(rng.IntN(max))
		default:
			if len(names) > 0 {
				return names[rng.IntN(len(names))]
			}
			return strconv.Itoa(rng.IntN(max))
		}
	}
	for range 300 {
		expr := strings.Join([]string{pick(59), pick(59), pick(23), "*", "*", pick(6, "MON", "sat")}, " ")
		s, err := Parse(expr)
		if err != nil {
			t.Fatalf("Parse(%q) error: %v", expr, err)
		}
		after := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour))))
		want := after.Truncate(time.Second).Add(time.Second)
		for !s.matches(want) {
			// Step a minute at a time through minutes with no occurrence,
			// then a second at a time: simple enough to trust.
			if m := want.Truncate(time.Minute); !s.anySecondIn(m) {
				want = m.Add(time.Minute)
				continue
			}
			want = want.Add(time.Second)
		}
		if got := s.Next(after); !got.Equal(want) {
			t.Fatalf("Parse(%q).Next(%s) = %s, want %s", expr, after, got, want)
		}
	}
}

// anySecondIn reports whether the minute starting at m has an occurrence:
// every field but the seconds matches (a seconds set is never empty).
func (s Schedule) anySecondIn(m time.Time) bool {
	s.fields[second] = 1 // second 0 only
	return s.matches(m)
}

func BenchmarkNext(b *testing.B) {
	s, _ := Parse("0 0 0 29 2 MON")
	at := utc("2025-01-01T00:00:00Z")
	for b.Loop() {
		_ = s.Next(at)
	}
}
