package tablestore_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tablestore"
)

// One Azurite serves the package's tests: starting one takes seconds.
var shared azurite.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// sharedAzurite starts the shared Azurite on first use.
func sharedAzurite(tb testing.TB) *azurite.Azurite {
	tb.Helper()
	return shared.Get(tb)
}

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
	return "t" + kind + base + azurite.Suffix()
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
