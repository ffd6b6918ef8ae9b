package ncrontab

import (
	"testing"
	"time"
)

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"0 */5 * * * *", "0 0 7 * * *", "0 30 9 * * 1-5", "*/10 * * * * *",
		"0 0 0 1 1 *", "0 0 0 29 2 *", "0 0 12 1 JAN,jul *", "0 0 8 * * MON-FRI",
		"0 0 0 29 FEB MON", "5/15 1-59/7 */3 1,15,31 */2 SUN", "00:05:00", "1.02:03:04.5",
		"*/5 * * * *", "0 0 0 30 2 *", "", "* * * * * 7", "0 1-2-3 * * * *",
	} {
		f.Add(seed, int64(1740787200)) // 2025-03-01T00:00:00Z
	}
	f.Fuzz(func(t *testing.T, expr string, unix int64) {
		s, err := Parse(expr)
		if err != nil {
			if !s.IsZero() {
				t.Fatalf("Parse(%q) returned a schedule and an error", expr)
			}
			return
		}
		// Keep the time within the years the calendar arithmetic is meant for.
		after := time.Unix(unix%(1<<35), unix%1e9).UTC()
		next := s.Next(after)
		if next.IsZero() {
			if s.Kind() == Cron {
				t.Fatalf("Parse(%q).Next(%s) found no occurrence", expr, after)
			}
			return
		}
		if !next.After(after) {
			t.Fatalf("Parse(%q).Next(%s) = %s, not after", expr, after, next)
		}
		if s.Kind() == Cron && !s.matches(next) {
			t.Fatalf("Parse(%q).Next(%s) = %s, which the schedule does not allow", expr, after, next)
		}
		if again := s.Next(next); !again.After(next) {
			t.Fatalf("Parse(%q).Next(%s) = %s, not after", expr, next, again)
		}
	})
}
