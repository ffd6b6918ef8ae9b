package ingest_test

import (
	"os"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/testing/apptest"
)

// One Azurite serves the package's tests that use storage without the
// whole app (the end-to-end stacks have their own); they keep apart by
// table and container names.
var shared azurite.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	apptest.Cleanup()
	os.Exit(code)
}

// tables is a Table Storage client of the shared Azurite.
func tables(t *testing.T) *aztables.ServiceClient {
	t.Helper()
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: shared.Get(t).ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// tableName is a table name of its own, starting with prefix.
func tableName(prefix string) string {
	return prefix + azurite.Suffix()
}
