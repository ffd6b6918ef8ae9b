// Package clocktest is a clock for tests of time-dependent logic that
// also talks to real services: real time, moved ahead by the test, so
// that what the services stamp (Azurite's, the simulator's) keeps going
// while the logic under test can be taken past a deadline at once.
//
// It is test support: only _test.go files import it.
package clocktest

import (
	"sync"
	"time"
)

// Ahead is real time plus an offset the test advances. The zero value
// is real time. It is safe for concurrent use.
type Ahead struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now is the real time plus the offset.
func (c *Ahead) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock ahead by d.
func (c *Ahead) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}
