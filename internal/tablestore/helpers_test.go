package tablestore_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/azurite"
	"github.com/offpath/offpath/internal/tablestore"
)

// One Azurite serves the package's tests and benchmarks: starting one takes
// seconds. Tests keep apart by table name.
var shared struct {
	once sync.Once
	az   *azurite.Azurite
	err  error
	dir  string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.az != nil {
		shared.az.Stop()
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func sharedAzurite(tb testing.TB) *azurite.Azurite {
	tb.Helper()
	shared.once.Do(func() {
		bin, err := azurite.Binary()
		if err != nil {
			shared.err = err
			return
		}
		if shared.dir, err = os.MkdirTemp("", "tablestore-azurite-"); err != nil {
			shared.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		shared.az, shared.err = azurite.Launch(ctx, bin, shared.dir, io.Discard)
	})
	if shared.err != nil {
		tb.Fatalf("azurite: %v", shared.err)
	}
	return shared.az
}

var tableSeq atomic.Int64

// tableName returns a unique table name (letters and digits) for the test.
func tableName(tb testing.TB, kind string) string {
	tb.Helper()
	var b strings.Builder
	for _, r := range strings.ToLower(tb.Name()) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	base := b.String()
	if len(base) > 40 {
		base = base[len(base)-40:]
	}
	return fmt.Sprintf("t%s%s%d%d", kind, base, time.Now().UnixNano()%1_000_000, tableSeq.Add(1))
}

func service(tb testing.TB) *aztables.ServiceClient {
	tb.Helper()
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: sharedAzurite(tb).ConnectionString()})
	if err != nil {
		tb.Fatal(err)
	}
	return svc
}

func newTenants(tb testing.TB) *tablestore.Tenants {
	tb.Helper()
	return tablestore.NewTenants(service(tb), tableName(tb, "ten"))
}

func newLedger(tb testing.TB, now func() time.Time) *tablestore.Ledger {
	tb.Helper()
	return tablestore.NewLedger(service(tb), tablestore.LedgerOptions{Table: tableName(tb, "led"), Now: now})
}
