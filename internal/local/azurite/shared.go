package azurite

import (
	"context"
	"io"
	"os"
	"sync"
	"testing"
	"time"
)

// Shared is one Azurite for all the tests of a package, started on first
// use: starting one takes seconds, and tests keep apart by the names of
// their containers, queues and tables. It keeps its data in memory, as
// StartInMemory's does. Declare one per test package and
// stop it in TestMain:
//
//	var az azurite.Shared
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		az.Stop()
//		os.Exit(code)
//	}
type Shared struct {
	once sync.Once
	az   *Azurite
	dir  string
	err  error
}

// Get returns the shared Azurite, starting it on first use; it fails the
// test if Azurite cannot start.
func (s *Shared) Get(tb testing.TB) *Azurite {
	tb.Helper()
	s.once.Do(func() {
		bin, err := Binary()
		if err != nil {
			s.err = err
			return
		}
		if s.dir, err = os.MkdirTemp("", "azurite-"); err != nil {
			s.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.az, s.err = launch(ctx, bin, s.dir, io.Discard, true)
	})
	if s.err != nil {
		tb.Fatalf("azurite: %v", s.err)
	}
	return s.az
}

// Stop stops the shared Azurite, if it started, and removes its data.
func (s *Shared) Stop() {
	if s.az != nil {
		s.az.Stop()
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}
