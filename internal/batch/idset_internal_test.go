package batch

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

func TestIDSet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		runLen int
		n      int
		dup    [2]int // positions of the repeated id; {0, 0} for none
	}{
		{"in memory, none", 1 << 10, 1000, [2]int{}},
		{"in memory, repeated", 1 << 10, 1000, [2]int{17, 901}},
		{"spilled, none", 64, 1000, [2]int{}},
		{"spilled, within a run", 64, 1000, [2]int{130, 140}},
		{"spilled, across runs", 64, 1000, [2]int{3, 999}},
		{"spilled, the last run in memory", 64, 1000, [2]int{500, 990}},
		{"spilled, runs only", 64, 1024, [2]int{0, 1023}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := newIDSet(dir)
			s.runLen = tc.runLen
			var err error
			for i := 0; i < tc.n && err == nil; i++ {
				id := fmt.Sprintf("doc-%d", i)
				if tc.dup != [2]int{} && i == tc.dup[1] {
					id = fmt.Sprintf("doc-%d", tc.dup[0])
				}
				err = s.Add(id, i)
			}
			if err == nil {
				err = s.Check()
			}
			if tc.runLen < tc.n && len(s.runs) < 2 {
				t.Fatalf("nothing spilled (%d runs)", len(s.runs)-1)
			}
			var ie *InvalidError
			if tc.dup == [2]int{} {
				if err != nil {
					t.Fatalf("no repeated id: %v", err)
				}
			} else if !errors.As(err, &ie) || ie.Code != "duplicate_item_id" ||
				ie.Message != fmt.Sprintf("items[%d] and items[%d] have the same id", tc.dup[0], tc.dup[1]) {
				t.Fatalf("err = %v, want items[%d] and items[%d] refused", err, tc.dup[0], tc.dup[1])
			}
			s.Close()
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("spill file left behind: %v", left)
			}
		})
	}
}

// BenchmarkIDSet adds 100,000 and 1,000,000 distinct ids and checks them,
// reporting the heap the set holds at the end of the adds and the time per
// id, beside the map of every id's digest that the submission kept before.
//
//	go test -run '^$' -bench IDSet -benchtime 1x ./internal/batch/
func BenchmarkIDSet(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("ids=%d", n), func(b *testing.B) {
			var setHeap, mapHeap float64
			var setTime, mapTime time.Duration
			for b.Loop() {
				base := heapMB()
				start := time.Now()
				s := newIDSet(b.TempDir())
				for i := range n {
					if err := s.Add("doc-"+strconv.Itoa(i), i); err != nil {
						b.Fatal(err)
					}
				}
				setHeap = max(setHeap, heapMB()-base)
				if err := s.Check(); err != nil {
					b.Fatal(err)
				}
				s.Close()
				setTime += time.Since(start)

				base = heapMB()
				start = time.Now()
				seen := map[[16]byte]struct{}{}
				for i := range n {
					sum := sha256.Sum256([]byte("doc-" + strconv.Itoa(i)))
					k := [16]byte(sum[:16])
					if _, dup := seen[k]; dup {
						b.Fatal("repeated")
					}
					seen[k] = struct{}{}
				}
				mapHeap = max(mapHeap, heapMB()-base)
				mapTime += time.Since(start)
				runtime.KeepAlive(seen)
			}
			b.ReportMetric(setHeap, "set-heap-MB")
			b.ReportMetric(mapHeap, "map-heap-MB")
			b.ReportMetric(float64(setTime.Nanoseconds())/float64(b.N*n), "set-ns/id")
			b.ReportMetric(float64(mapTime.Nanoseconds())/float64(b.N*n), "map-ns/id")
		})
	}
}

// heapMB is the live heap after a collection, in MB.
func heapMB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / 1e6
}
