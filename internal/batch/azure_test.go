package batch_test

import (
	"encoding/json"
	"testing"

	"github.com/offpath/offpath/internal/batch"
)

// TestRequestCounts_JSON pins the counts' JSON: Azure's snake_case, and a
// job stored while they were written capitalised still reads.
func TestRequestCounts_JSON(t *testing.T) {
	b, err := json.Marshal(batch.RequestCounts{Total: 3, Completed: 2, Failed: 1})
	if err != nil || string(b) != `{"total":3,"completed":2,"failed":1}` {
		t.Errorf("RequestCounts marshals to %s (%v)", b, err)
	}
	var old batch.RequestCounts
	if err := json.Unmarshal([]byte(`{"Total":3,"Completed":2,"Failed":1}`), &old); err != nil || old != (batch.RequestCounts{Total: 3, Completed: 2, Failed: 1}) {
		t.Errorf("a stored capitalised row reads as %+v (%v)", old, err)
	}
}
