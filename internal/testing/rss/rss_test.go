package rss_test

import (
	"os/exec"
	"testing"

	"github.com/offpath/offpath/internal/testing/rss"
)

// TestPeak touches 64 MB after a reset: the peak grows by at least that
// much and stays there after the memory is unreachable.
func TestPeak(t *testing.T) {
	rss.Reset(t, rss.Self)
	before := rss.Peak(t, rss.Self)
	if now := rss.Current(t, rss.Self); now <= 0 || before < now/2 {
		t.Fatalf("just reset: peak %d, resident %d", before, now)
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	if got := rss.Peak(t, rss.Self); got < before+60<<20 {
		t.Errorf("peak %d MB after touching 64 MB, was %d MB", got>>20, before>>20)
	}
	if n, err := rss.Resident(rss.Self); err != nil || n < 60<<20 {
		t.Errorf("Resident = %d, %v with 64 MB touched", n, err)
	}
	_ = buf[len(buf)-1]
}

// TestPeakExited reads a finished child's peak from its rusage.
func TestPeakExited(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("no child to run: %v", err)
	}
	if got := rss.PeakExited(t, cmd.ProcessState); got <= 0 || got > 1<<30 {
		t.Errorf("PeakExited = %d bytes for true(1)", got)
	}
}
