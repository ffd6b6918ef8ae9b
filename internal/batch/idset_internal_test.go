package batch

import (
	"errors"
	"fmt"
	"os"
	"testing"
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
