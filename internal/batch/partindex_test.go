package batch_test

import (
	"io"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/batchfile"
)

// A part's IndexReader opens its own index blob; a part without one reads
// as an empty index and opens nothing.
func TestPart_IndexReader(t *testing.T) {
	ref, err := batchfile.NewRef("job1", 2, 0, "contoso", "doc-1")
	if err != nil {
		t.Fatal(err)
	}
	index := `{"job":"job1","part":2}` + "\n" + `{"tenant":"contoso","item_id":"doc-1"}` + "\n"
	var opened []string
	openAt := func(blob string, off int64) (io.ReadCloser, error) {
		opened = append(opened, blob)
		return io.NopCloser(strings.NewReader(index[off:])), nil
	}

	p := batch.Part{Index: 2, IndexBlob: "contoso/job1/part-2.index.jsonl"}
	x := p.IndexReader("job1", openAt)
	line, e, err := x.Resolve(ref.String())
	if err != nil || line != 0 || e.ItemID != "doc-1" || e.Tenant != "contoso" {
		t.Fatalf("Resolve = %d %+v %v", line, e, err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if len(opened) != 1 || opened[0] != p.IndexBlob {
		t.Fatalf("opened %q, want the part's index blob once", opened)
	}

	opened = nil
	empty := batch.Part{Index: 2}
	if _, ok, err := empty.IndexReader("job1", openAt).Lookup(0); ok || err != nil {
		t.Fatalf("Lookup on a part without an index = %v %v, want nothing", ok, err)
	}
	if len(opened) != 0 {
		t.Fatalf("opened %q for a part without an index", opened)
	}
}
