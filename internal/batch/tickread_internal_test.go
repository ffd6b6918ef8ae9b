package batch

import (
	"crypto/rand"
	"testing"
	"time"
)

// TestPlanRanges: a tenant's active jobs are read in runs whose
// neighbours were created no more than rangeGap apart, so an old job
// still active does not make the tick read every job made since.
func TestPlanRanges(t *testing.T) {
	base := time.Now().Truncate(time.Millisecond)
	id := func(at time.Time) string {
		s, err := NewJobID(at, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if got := jobIDTime(s); !got.Equal(at) {
			t.Fatalf("jobIDTime(%s) = %v, want %v", s, got, at)
		}
		return s
	}
	a0, a1, a2 := id(base), id(base.Add(time.Second)), id(base.Add(50*time.Minute))
	a3 := id(base.Add(50*time.Minute + rangeGap + time.Second))
	b0 := id(base)
	refs := []ActiveRef{{"contoso", a2, base}, {"contoso", a0, base}, {"fabrikam", b0, base}, {"contoso", a3, base},
		{"contoso", a1, base}, {"contoso", "not-a-job-id", base}}
	got := planRanges(refs)
	want := []jobRange{
		{tenant: "contoso", newest: a3, oldest: a3, jobs: 1},
		{tenant: "contoso", newest: a2, oldest: a0, jobs: 3},
		{tenant: "fabrikam", newest: b0, oldest: b0, jobs: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("ranges %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("range %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
