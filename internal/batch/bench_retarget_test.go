package batch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
)

// BenchmarkRetarget measures what a part moved to another deployment than
// the one its input was written for costs at admission. A part's lines
// name their deployment (Azure requires the file's model to be the
// batch's), so a moved part is read back from platform storage, its model
// rewritten line by line and uploaded again, where a part that stays is
// streamed to the Files API as stored. Each iteration submits the same
// 100,000-line corpus twice, written for the cheaper deployment: the
// first admission finds room there (the plain upload, the baseline), the
// second finds it full and moves the part to the dearer one (the
// re-upload). The same bytes but for the model's name in each line
// (4 bytes shorter, 0.3%), between the same endpoints, the simulator's
// clock frozen so no batch runs; the figure is the moved admission over the
// plain one. Each job is cancelled, its batch ended and harvested before
// the next submission, so that every admission tick polls its job alone.
//
//	go test -run '^$' -bench Retarget -benchtime 1x ./internal/batch/
func BenchmarkRetarget(b *testing.B) {
	const n = 100_000
	models, sim := twoDeployments(0)
	frozen := 0.0
	sim.Speed = &frozen
	e := newEnv(b, envConfig{models: models, sim: sim})
	ctx := context.Background()
	w, err := e.blobs.Create(ctx, e.cont.Uploads, "contoso/corpus.jsonl", nil)
	if err != nil {
		b.Fatal(err)
	}
	prompt := strings.Repeat("The printer on floor three is on fire again. ", 30)
	for i := range n {
		fmt.Fprintf(w, `{"id":"doc-%d","prompt":"%s %d"}`+"\n", i, prompt, i)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}

	admit := func(room int64) (batch.Part, time.Duration) {
		b.Helper()
		j, _, err := e.svc.Submit(e.ctx(), e.tenants["contoso"], batch.Request{Alias: "summarize", MaxTokens: 64, InputBlob: "contoso/corpus.jsonl"})
		if err != nil || len(j.Parts) != 1 || j.Parts[0].Deployment != cheapDep {
			b.Fatalf("Submit: %v (%d parts)", err, len(j.Parts))
		}
		e.opts.Quota = map[string]int64{cheapDep: room}
		e.svc = e.service()
		start := time.Now()
		rep, err := e.svc.Poll(e.ctx())
		took := time.Since(start)
		if err != nil || rep.Jobs != 1 || rep.Admitted != 1 {
			b.Fatalf("admission tick: %+v %v", rep, err)
		}
		p := e.get(j.ID).Parts[0]
		settle(b, e, j.ID) // so that the next admission tick polls no other job
		return p, took
	}

	var plain, moved time.Duration
	var size int64
	b.ResetTimer()
	for range b.N {
		// Room for the whole part on the cheaper deployment, then none.
		p, d := admit(1 << 40)
		if p.Deployment != cheapDep {
			b.Fatalf("with room, the part went to %s", p.Deployment)
		}
		plain += d
		size = p.Bytes
		p, d = admit(1)
		if p.Deployment != dearDep || p.Placement != batch.PlaceCheaperFull {
			b.Fatalf("without room, the part went to %s (%s)", p.Deployment, p.Placement)
		}
		moved += d
	}
	b.StopTimer()
	nf := float64(b.N)
	b.ReportMetric(float64(size)/1e6, "part-MB")
	b.ReportMetric(plain.Seconds()/nf, "plain-admit-s")
	b.ReportMetric(moved.Seconds()/nf, "moved-admit-s")
	b.ReportMetric(moved.Seconds()/plain.Seconds(), "x-plain")
	b.Logf("%d lines, part %.1f MB: admission with a re-upload for another deployment %.2f s = %.2f× the plain admission %.2f s",
		n, float64(size)/1e6, moved.Seconds()/nf, moved.Seconds()/plain.Seconds(), plain.Seconds()/nf)
}
