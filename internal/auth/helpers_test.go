package auth_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/azurite"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
)

// One Azurite for the package; tests keep apart by table name.
var shared azurite.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

var seq atomic.Int64

// newStore returns a tenant store on a fresh table of the shared Azurite.
func newStore(tb testing.TB) *tablestore.Tenants {
	tb.Helper()
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: shared.Get(tb).ConnectionString()})
	if err != nil {
		tb.Fatal(err)
	}
	return tablestore.NewTenants(svc, fmt.Sprintf("auth%d%d", time.Now().UnixNano()%1_000_000_000, seq.Add(1)))
}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// seed creates an active tenant with one key and the given app ids and
// returns the plain key.
func seed(tb testing.TB, s *tablestore.Tenants, id string, now time.Time, apps ...string) string {
	tb.Helper()
	t := tenant.New(id, "Team "+id, now)
	t.AppIDs = apps
	plain, _, err := t.RotateKey(rand.Reader, now, tenant.DefaultOverlap)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Create(context.Background(), t); err != nil {
		tb.Fatal(err)
	}
	return plain
}
