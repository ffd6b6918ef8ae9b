package ledger

import (
	"errors"
	"fmt"
	"time"
)

// ErrBadMonth: a month string is not YYYY-MM.
var ErrBadMonth = errors.New("month must be YYYY-MM")

// Month is a calendar month in UTC. The zero Month is invalid.
type Month struct {
	year  int
	month time.Month
}

// MonthOf returns the UTC month containing t: 23:30 on 30 November in New
// York is already December.
func MonthOf(t time.Time) Month {
	y, m, _ := t.UTC().Date()
	return Month{y, m}
}

// ParseMonth parses exactly "YYYY-MM" (years 2000 to 9999).
func ParseMonth(s string) (Month, error) {
	if len(s) != 7 || s[4] != '-' {
		return Month{}, fmt.Errorf("%w, got %q", ErrBadMonth, clip(s))
	}
	y, okY := digits(s[:4])
	m, okM := digits(s[5:])
	if !okY || !okM || y < 2000 || m < 1 || m > 12 {
		return Month{}, fmt.Errorf("%w, got %q", ErrBadMonth, clip(s))
	}
	return Month{y, time.Month(m)}, nil
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// String returns "YYYY-MM".
func (m Month) String() string { return fmt.Sprintf("%04d-%02d", m.year, int(m.month)) }

// IsZero reports whether m is the zero Month.
func (m Month) IsZero() bool { return m.year == 0 }

// Start is the first instant of the month, UTC.
func (m Month) Start() time.Time { return time.Date(m.year, m.month, 1, 0, 0, 0, 0, time.UTC) }

// End is the first instant of the next month, UTC.
func (m Month) End() time.Time { return m.Start().AddDate(0, 1, 0) }

// Next returns the following month.
func (m Month) Next() Month { return MonthOf(m.End()) }

// Prev returns the preceding month.
func (m Month) Prev() Month { return MonthOf(m.Start().Add(-time.Nanosecond)) }

// MarshalText writes "YYYY-MM".
func (m Month) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText parses "YYYY-MM".
func (m *Month) UnmarshalText(b []byte) error {
	v, err := ParseMonth(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}
