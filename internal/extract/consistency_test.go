package extract_test

import (
	"testing"

	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/extract"
)

// TestKindOf_ClaimCheckExtensions keeps the enqueue side's list of accepted
// extensions and this package's kinds in step: everything enqueued can be
// extracted.
func TestKindOf_ClaimCheckExtensions(t *testing.T) {
	t.Parallel()
	for _, ext := range claimcheck.DefaultExtensions() {
		if _, err := extract.KindOf("doc"+ext, ""); err != nil {
			t.Errorf("claimcheck accepts %q, KindOf rejects it: %v", ext, err)
		}
	}
}
