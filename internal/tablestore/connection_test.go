package tablestore_test

import (
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/tablestore"
)

// TestExpandDevelopmentStorage: the shorthand, however written, becomes
// Azurite's account with all three endpoints; anything else is kept.
func TestExpandDevelopmentStorage(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"UseDevelopmentStorage=true", " usedevelopmentstorage=TRUE; ", "UseDevelopmentStorage=true;;"} {
		if got := tablestore.ExpandDevelopmentStorage(in); got != tablestore.DevelopmentStorage {
			t.Errorf("ExpandDevelopmentStorage(%q) = %q", in, got)
		}
	}
	for _, want := range []string{"BlobEndpoint=http://127.0.0.1:10000/", "QueueEndpoint=http://127.0.0.1:10001/", "TableEndpoint=http://127.0.0.1:10002/"} {
		if !strings.Contains(tablestore.DevelopmentStorage, want) {
			t.Errorf("DevelopmentStorage lacks %s", want)
		}
	}
	for _, in := range []string{"", "UseDevelopmentStorage=false", "AccountName=x;AccountKey=eA==;UseDevelopmentStorage=true"} {
		if got := tablestore.ExpandDevelopmentStorage(in); got != in {
			t.Errorf("ExpandDevelopmentStorage(%q) = %q, want it unchanged", in, got)
		}
	}
}
