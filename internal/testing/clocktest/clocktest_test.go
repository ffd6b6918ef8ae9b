package clocktest_test

import (
	"testing"
	"time"

	"github.com/offpath/offpath/internal/testing/clocktest"
)

func TestAhead_RealTimePlusTheAdvance(t *testing.T) {
	var c clocktest.Ahead
	before := time.Now()
	if got := c.Now(); got.Before(before) || got.After(time.Now()) {
		t.Errorf("zero clock at %v, want real time", got)
	}
	c.Advance(time.Hour)
	c.Advance(30 * time.Minute)
	before = time.Now()
	got := c.Now()
	if got.Before(before.Add(90*time.Minute)) || got.After(time.Now().Add(90*time.Minute)) {
		t.Errorf("clock at %v after 1h30m, want real time plus that", got)
	}
}
