package batch

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// idRun is how many ids an idSet holds in memory (24 bytes each) before it
// spills them, sorted, to its file.
const idRun = 1 << 15

// An idSet finds items of one job that share an id, in memory that does
// not grow with the items: each id is kept as its digest (the first 16
// bytes of its SHA-256) with the item's position; every idRun ids are
// sorted, checked and appended to a temporary file as one run, and Check
// merges the runs. A repeated id is found however far apart its items are,
// and only a repeated id is (two ids sharing a 128-bit digest is not a
// concern at any job size).
type idSet struct {
	dir    string // for the spill file; "" is the system's temporary folder
	runLen int
	run    []idEntry
	file   *os.File
	runs   []int64 // the file's run boundaries: run i is [runs[i], runs[i+1])
}

type idEntry struct {
	sum [16]byte
	pos int64
}

const idEntrySize = 24

func newIDSet(dir string) *idSet { return &idSet{dir: dir, runLen: idRun} }

// Add records the id of the item at position pos (0-based). It returns a
// duplicate error when the run it fills holds the id twice.
func (s *idSet) Add(id string, pos int) error {
	if s.run == nil {
		s.run = make([]idEntry, 0, s.runLen)
	}
	e := idEntry{pos: int64(pos)}
	sum := sha256.Sum256([]byte(id))
	copy(e.sum[:], sum[:16])
	s.run = append(s.run, e)
	if len(s.run) < s.runLen {
		return nil
	}
	return s.spill()
}

func compareIDs(a, b idEntry) int {
	if c := bytes.Compare(a.sum[:], b.sum[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.pos, b.pos)
}

// sortRun sorts the run and returns its first repeated id.
func (s *idSet) sortRun() error {
	slices.SortFunc(s.run, compareIDs)
	for i := 1; i < len(s.run); i++ {
		if s.run[i].sum == s.run[i-1].sum {
			return duplicateID(s.run[i-1].pos, s.run[i].pos)
		}
	}
	return nil
}

func (s *idSet) spill() error {
	if err := s.sortRun(); err != nil {
		return err
	}
	if s.file == nil {
		f, err := os.CreateTemp(s.dir, "item-ids-*")
		if err != nil {
			return fmt.Errorf("item id set: %w", err)
		}
		s.file = f
		s.runs = []int64{0}
	}
	w := bufio.NewWriterSize(s.file, 64<<10)
	var b [idEntrySize]byte
	for _, e := range s.run {
		copy(b[:16], e.sum[:])
		binary.LittleEndian.PutUint64(b[16:], uint64(e.pos))
		if _, err := w.Write(b[:]); err != nil {
			return fmt.Errorf("item id set: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("item id set: %w", err)
	}
	s.runs = append(s.runs, s.runs[len(s.runs)-1]+int64(len(s.run))*idEntrySize)
	s.run = s.run[:0]
	return nil
}

// Check returns a duplicate error if any two items added share an id.
func (s *idSet) Check() error {
	if err := s.sortRun(); err != nil {
		return err
	}
	if s.file == nil {
		return nil
	}
	// A k-way merge of the spilled runs and the one in memory: equal
	// digests come out next to each other.
	h := &idHeap{}
	for i := 1; i < len(s.runs); i++ {
		r := &idCursor{r: bufio.NewReaderSize(io.NewSectionReader(s.file, s.runs[i-1], s.runs[i]-s.runs[i-1]), 8<<10)}
		if err := h.push(r); err != nil {
			return err
		}
	}
	if err := h.push(&idCursor{mem: s.run}); err != nil {
		return err
	}
	var prev idEntry
	first := true
	for h.Len() > 0 {
		c := (*h)[0]
		e := c.cur
		if !first && e.sum == prev.sum {
			return duplicateID(min(prev.pos, e.pos), max(prev.pos, e.pos))
		}
		prev, first = e, false
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}

// Close removes the spill file.
func (s *idSet) Close() {
	s.run = nil
	if s.file != nil {
		s.file.Close()
		os.Remove(s.file.Name())
		s.file = nil
	}
}

func duplicateID(a, b int64) error {
	return invalid("duplicate_item_id", "items[%d] and items[%d] have the same id", a, b)
}

// idCursor reads one sorted run, from the file or from memory.
type idCursor struct {
	r   *bufio.Reader
	mem []idEntry
	cur idEntry
}

func (c *idCursor) next() (bool, error) {
	if c.r == nil {
		if len(c.mem) == 0 {
			return false, nil
		}
		c.cur, c.mem = c.mem[0], c.mem[1:]
		return true, nil
	}
	var b [idEntrySize]byte
	if _, err := io.ReadFull(c.r, b[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("item id set: %w", err)
	}
	copy(c.cur.sum[:], b[:16])
	c.cur.pos = int64(binary.LittleEndian.Uint64(b[16:]))
	return true, nil
}

type idHeap []*idCursor

func (h *idHeap) push(c *idCursor) error {
	ok, err := c.next()
	if ok {
		heap.Push(h, c)
	}
	return err
}

func (h idHeap) Len() int           { return len(h) }
func (h idHeap) Less(i, j int) bool { return compareIDs(h[i].cur, h[j].cur) < 0 }
func (h idHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *idHeap) Push(x any)        { *h = append(*h, x.(*idCursor)) }
func (h *idHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
