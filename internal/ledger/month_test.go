package ledger_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/ledger"
)

func TestParseMonth(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"2026-11", "2000-01", "9999-12"} {
		m, err := ledger.ParseMonth(in)
		if err != nil || m.String() != in {
			t.Errorf("ParseMonth(%q) = %v, %v", in, m, err)
		}
	}
	bad := []string{"", "2026", "2026-1", "2026-13", "2026-00", "26-11", "2026/11", "2026-11-01", " 2026-11", "2026-11 ",
		"+026-11", "-026-11", "2026-+1", "1999-12", "２０２６-11", "2026-1\x00", "2026-11'", strings.Repeat("9", 10000), "0000-01", "abcd-ef"}
	for _, in := range bad {
		if m, err := ledger.ParseMonth(in); !errors.Is(err, ledger.ErrBadMonth) {
			t.Errorf("ParseMonth(%q) = %v, %v; want ErrBadMonth", in, m, err)
		} else if len(err.Error()) > 100 {
			t.Errorf("ParseMonth error quotes too much input: %d bytes", len(err.Error()))
		}
	}
}

func TestMonthOf_IsUTC(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		ny = time.FixedZone("EST", -5*3600)
	}
	tokyo := time.FixedZone("JST", 9*3600)
	tests := []struct {
		name string
		at   time.Time
		want string
	}{
		{"evening in New York is next month in UTC", time.Date(2026, 11, 30, 23, 30, 0, 0, ny), "2026-12"},
		{"morning in Tokyo is previous month in UTC", time.Date(2026, 12, 1, 8, 59, 59, 0, tokyo), "2026-11"},
		{"last nanosecond", time.Date(2026, 11, 30, 23, 59, 59, 999_999_999, time.UTC), "2026-11"},
		{"first instant", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), "2026-12"},
		{"new year", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), "2027-01"},
		{"leap day", time.Date(2028, 2, 29, 12, 0, 0, 0, time.UTC), "2028-02"},
	}
	for _, tt := range tests {
		if got := ledger.MonthOf(tt.at).String(); got != tt.want {
			t.Errorf("%s: MonthOf(%v) = %s, want %s", tt.name, tt.at, got, tt.want)
		}
	}
}

func TestMonth_Bounds(t *testing.T) {
	t.Parallel()
	m, _ := ledger.ParseMonth("2026-12")
	if !m.Start().Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) || !m.End().Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("2026-12: [%v, %v)", m.Start(), m.End())
	}
	if m.Next().String() != "2027-01" || m.Prev().String() != "2026-11" {
		t.Errorf("Next/Prev of 2026-12 = %s, %s", m.Next(), m.Prev())
	}
	if m.Start().Location() != time.UTC {
		t.Error("Start is not UTC")
	}
	var z ledger.Month
	if !z.IsZero() || m.IsZero() {
		t.Error("IsZero")
	}
	var u ledger.Month
	if err := u.UnmarshalText([]byte("2026-02")); err != nil || u.String() != "2026-02" {
		t.Errorf("UnmarshalText = %v, %v", u, err)
	}
	if err := u.UnmarshalText([]byte("2026-2")); err == nil {
		t.Error("UnmarshalText accepted 2026-2")
	}
}
