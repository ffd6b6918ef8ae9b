package memstore_test

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tablestore"
)

// One Azurite serves the package's tests; they keep apart by table name.
var shared azurite.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// tables returns a table service client of the shared Azurite and a fresh
// table name.
func tables(t *testing.T, prefix string) (*aztables.ServiceClient, string) {
	t.Helper()
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: shared.Get(t).ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	return svc, prefix + azurite.Suffix()
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }
