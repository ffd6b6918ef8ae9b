package batchfile_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/offpath/offpath/internal/batchfile"
)

// opener serves an index from memory from any offset, counting opens.
func opener(data []byte, opens *int) batchfile.IndexOpener {
	return func(off int64) (io.ReadCloser, error) {
		*opens++
		return io.NopCloser(bytes.NewReader(data[off:])), nil
	}
}

func TestIndexReader_ResolvesInAnyOrder(t *testing.T) {
	t.Parallel()
	const n = 3*batchfile.IndexWindow + 100
	w, p := newWriter(t, batchfile.Limits{})
	ids := make([]string, n)
	for i := range n {
		ref, err := w.Add(item("tenant-"+strconv.Itoa(i%3), "item-"+strconv.Itoa(i), "x"))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = ref.String()
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Roughly in order (shuffled 64 at a time), then lines far behind the
	// window, then the first and the last again.
	order := make([]int, 0, n+3)
	for i := 0; i < n; i += 64 {
		block := rand.Perm(min(64, n-i))
		for _, k := range block {
			order = append(order, i+k)
		}
	}
	order = append(order, 5, n/2, 0, n-1)
	var opens int
	x := batchfile.NewIndexReader("job1", 0, opener(p.indexes[0].Bytes(), &opens))
	defer x.Close()
	for _, line := range order {
		got, e, err := x.Resolve(ids[line])
		if err != nil || got != line || e.CustomID != ids[line] || e.ItemID != "item-"+strconv.Itoa(line) || e.Tenant != "tenant-"+strconv.Itoa(line%3) {
			t.Fatalf("Resolve(%s) = %d, %+v, %v", ids[line], got, e, err)
		}
	}
	if x.Rereads != 3 || opens != 4 {
		t.Errorf("%d rereads and %d opens, want 3 entries read again behind the window and 4 opens", x.Rereads, opens)
	}
	if _, ok, err := x.Lookup(n); ok || err != nil {
		t.Errorf("Lookup past the end = %v, %v; want not found", ok, err)
	}
}

func TestIndexReader_RefusesForeignAndBrokenEntries(t *testing.T) {
	t.Parallel()
	w, p := newWriter(t, batchfile.Limits{})
	ref, err := w.Add(item("t", "i", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var opens int
	x := batchfile.NewIndexReader("job1", 0, opener(p.indexes[0].Bytes(), &opens))
	other, _ := batchfile.NewRef("job1", 0, 0, "t", "another item")
	for id, want := range map[string]error{
		other.String():          batchfile.ErrCheckMismatch,
		"job1.0.1." + ref.Check: batchfile.ErrNotIndexed,
		"job1.1.0." + ref.Check: batchfile.ErrNotIndexed,
		"job2.0.0." + ref.Check: batchfile.ErrNotIndexed,
		"not a custom id":       batchfile.ErrCustomID,
	} {
		if _, _, err := x.Resolve(id); !errors.Is(err, want) {
			t.Errorf("Resolve(%q) error = %v, want %v", id, err, want)
		}
	}
	// An index whose entry was altered, or that belongs to another part,
	// is an error, not a lookup that misses.
	tampered := bytes.Replace(p.indexes[0].Bytes(), []byte(`"item_id":"i"`), []byte(`"item_id":"j"`), 1)
	if _, _, err := batchfile.NewIndexReader("job1", 0, opener(tampered, &opens)).Resolve(ref.String()); !errors.Is(err, batchfile.ErrCheckMismatch) {
		t.Errorf("tampered index: %v, want ErrCheckMismatch", err)
	}
	if _, ok, err := batchfile.NewIndexReader("job1", 1, opener(p.indexes[0].Bytes(), &opens)).Lookup(0); ok || err == nil {
		t.Errorf("another part's index: %v, %v; want an error", ok, err)
	}
}
