package cputime_test

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/testing/cputime"
)

// TestOf: hashing for a while shows in the process's CPU time.
func TestOf(t *testing.T) {
	before := cputime.Of(t, cputime.Self)
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(time.Minute); cputime.Of(t, cputime.Self)-before < 200*time.Millisecond && time.Now().Before(deadline); {
		sha256.Sum256(buf)
	}
	if got := cputime.Of(t, cputime.Self) - before; got < 200*time.Millisecond || got > time.Minute {
		t.Errorf("CPU time grew by %v while hashing for 200 ms of CPU", got)
	}
}
