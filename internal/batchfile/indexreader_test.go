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
	ref, index := oneEntry(t)
	var opens int
	x := batchfile.NewIndexReader("job1", 0, opener(index, &opens))
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
	tampered := bytes.Replace(index, []byte(`"item_id":"i"`), []byte(`"item_id":"j"`), 1)
	if _, _, err := batchfile.NewIndexReader("job1", 0, opener(tampered, &opens)).Resolve(ref.String()); !errors.Is(err, batchfile.ErrCheckMismatch) {
		t.Errorf("tampered index: %v, want ErrCheckMismatch", err)
	}
	if _, ok, err := batchfile.NewIndexReader("job1", 1, opener(index, &opens)).Lookup(0); ok || err == nil {
		t.Errorf("another part's index: %v, %v; want an error", ok, err)
	}
}

// An index written before indexes had a header names every entry's
// custom_id; it still reads, and an entry whose custom_id is not its own
// position and check is an error.
func TestIndexReader_ReadsIndexesWithoutHeader(t *testing.T) {
	t.Parallel()
	items := []struct{ tenant, id, line string }{
		{"contoso", "doc-1", `"tenant":"contoso","item_id":"doc-1"`},
		{"fabrikam", "", `"tenant":"fabrikam"`},
		{"contoso", "\xff\xfe", `"tenant":"contoso","item_id_b64":"__4"`},
	}
	var legacy bytes.Buffer
	ids := make([]string, len(items))
	for i, it := range items {
		ref, err := batchfile.NewRef("job1", 0, i, it.tenant, it.id)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = ref.String()
		legacy.WriteString(`{"custom_id":"` + ids[i] + `",` + it.line + "}\n")
	}
	var opens int
	x := batchfile.NewIndexReader("job1", 0, opener(legacy.Bytes(), &opens))
	for i := len(items) - 1; i >= 0; i-- {
		line, e, err := x.Resolve(ids[i])
		if err != nil || line != i || e != (batchfile.IndexEntry{CustomID: ids[i], Tenant: items[i].tenant, ItemID: items[i].id}) {
			t.Errorf("Resolve(%s) = %d %+q %v", ids[i], line, e, err)
		}
	}

	tampered := bytes.Replace(legacy.Bytes(), []byte(`"item_id":"doc-1"`), []byte(`"item_id":"doc-2"`), 1)
	if _, _, err := batchfile.NewIndexReader("job1", 0, opener(tampered, &opens)).Lookup(0); !errors.Is(err, batchfile.ErrCheckMismatch) {
		t.Errorf("Lookup in a tampered index: %v, want ErrCheckMismatch", err)
	}
	lines := bytes.SplitAfter(legacy.Bytes(), []byte("\n"))
	swapped := bytes.Join([][]byte{lines[1], lines[0], lines[2]}, nil)
	if _, ok, err := batchfile.NewIndexReader("job1", 0, opener(swapped, &opens)).Lookup(0); ok || err == nil {
		t.Errorf("Lookup of an entry at another's position: %v, %v; want an error", ok, err)
	}
	if _, ok, err := batchfile.NewIndexReader("job2", 0, opener(legacy.Bytes(), &opens)).Lookup(0); ok || err == nil {
		t.Errorf("another job's index: %v, %v; want an error", ok, err)
	}
}

// An index of another job is refused at its header; an empty index, or
// one with only its header, has no entries.
func TestIndexReader_Header(t *testing.T) {
	t.Parallel()
	ref, index := oneEntry(t)
	var opens int
	if _, _, err := batchfile.NewIndexReader("job2", 0, opener(index, &opens)).Resolve("job2.0.0." + ref.Check); err == nil || errors.Is(err, batchfile.ErrNotIndexed) {
		t.Errorf("another job's index: %v, want an error that is not a miss", err)
	}
	for name, data := range map[string]string{"empty": "", "header only": `{"job":"job1","part":0}` + "\n"} {
		x := batchfile.NewIndexReader("job1", 0, opener([]byte(data), &opens))
		if _, ok, err := x.Lookup(0); ok || err != nil {
			t.Errorf("%s index: Lookup(0) = %v, %v; want not found", name, ok, err)
		}
		if _, _, err := x.Resolve(ref.String()); !errors.Is(err, batchfile.ErrNotIndexed) {
			t.Errorf("%s index: Resolve = %v, want ErrNotIndexed", name, err)
		}
	}
	for name, data := range map[string]string{
		"header without part": `{"job":"job1"}` + "\n",
		"not JSON":            "job1 0\n",
	} {
		if _, ok, err := batchfile.NewIndexReader("job1", 0, opener([]byte(data), &opens)).Lookup(0); ok || err == nil {
			t.Errorf("%s: Lookup(0) = %v, %v; want an error", name, ok, err)
		}
	}
}

// oneEntry writes the index of part 0 of job1 with one line, item "i" of
// tenant "t".
func oneEntry(t *testing.T) (batchfile.Ref, []byte) {
	t.Helper()
	w, p := newWriter(t, batchfile.Limits{})
	ref, err := w.Add(item("t", "i", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return ref, p.indexes[0].Bytes()
}
