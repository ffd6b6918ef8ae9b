package batch_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/batchapi"
	"github.com/offpath/offpath/internal/batchfile"
)

const benchMaxPeakRSSMB = 100

// BenchmarkHarvest100k harvests a finished 100,000-line batch: copy the
// output and error files from the simulator into Azurite (with SHA-256),
// parse every line against the index, write the per-item results file,
// record the ledger row, delete the Azure files and mark the job — one poll
// tick. In the same iteration, before the harvest, it copies the same
// output file between the same two endpoints with nothing but io.Copy
// ("plain"). It reports lines/s, the ratio to the plain copy, and the
// process's peak RSS during the harvest (simulator included), and fails if
// that reaches 100 MB. Run it with `make bench` or
//
//	go test -run '^$' -bench Harvest100k -benchtime 2x ./internal/batch/
func BenchmarkHarvest100k(b *testing.B) {
	const n = 100_000
	cfg := simConfig(3000)
	cfg.Batch.LinesPerMinute = 10_000_000
	e := newEnv(b, envConfig{sim: cfg})
	items := func() []batch.Item {
		in := make([]batch.Item, n)
		for i := range in {
			in[i] = batch.Item{ID: "ticket-" + strconv.Itoa(i), Prompt: fmt.Sprintf("Ticket %d: the printer on floor %d prints only blank pages since Tuesday's update; please advise.", i, i%9)}
		}
		return in
	}
	ctx := e.ctx()
	var harvest, plain time.Duration
	var outBytes int64
	var peak float64
	b.StopTimer()
	for i := range b.N {
		j := e.submit("contoso", items()) // the items are garbage before the harvest
		e.pollUntil(2*time.Minute, func(j batch.Job) bool { return j.Parts[0].Status == batch.PartSubmitted }, j.ID)
		bt := waitBatch(b, e, e.get(j.ID).Parts[0].BatchID)

		start := time.Now()
		body, err := e.azure.OpenFileContent(ctx, bt.OutputFileID)
		if err != nil {
			b.Fatal(err)
		}
		w, err := e.blobs.Create(ctx, e.cont.Results, fmt.Sprintf("plain/%d.jsonl", i), nil)
		if err != nil {
			b.Fatal(err)
		}
		copied, err := io.Copy(w, body)
		body.Close()
		if err != nil || w.Close() != nil {
			b.Fatalf("plain copy: %v", err)
		}
		plain += time.Since(start)
		outBytes = copied

		debug.FreeOSMemory()
		resetPeakRSS(b)
		b.StartTimer()
		start = time.Now()
		if _, err := e.svc.Poll(ctx); err != nil {
			b.Fatal(err)
		}
		harvest += time.Since(start)
		b.StopTimer()
		peak = max(peak, peakRSSMB(b))
		got := e.get(j.ID)
		if got.State != batch.Harvested || got.Counts().OK != n {
			b.Fatalf("after the harvest tick: %s, %+v", got.State, got.Counts())
		}
	}
	secs := harvest.Seconds() / float64(b.N)
	b.ReportMetric(float64(n)/secs, "lines/s")
	b.ReportMetric(secs, "harvest-s")
	b.ReportMetric(plain.Seconds()/float64(b.N), "plain-copy-s")
	b.ReportMetric(harvest.Seconds()/plain.Seconds(), "x-plain-copy")
	b.ReportMetric(float64(outBytes)/1e6, "output-MB")
	b.ReportMetric(peak, "peak-RSS-MB")
	b.Logf("harvest %.2f s (%.0f lines/s), plain copy %.2f s, %.1f MB output, peak RSS %.1f MB",
		secs, float64(n)/secs, plain.Seconds()/float64(b.N), float64(outBytes)/1e6, peak)
	if peak >= benchMaxPeakRSSMB {
		b.Errorf("peak RSS %.1f MB during the harvest, want under %d MB", peak, benchMaxPeakRSSMB)
	}
}

// waitBatch waits until the simulator's batch is finished with its files.
func waitBatch(tb testing.TB, e *env, id string) batchapi.Batch {
	tb.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		bt, err := e.azure.GetBatch(context.Background(), id)
		if err != nil {
			tb.Fatal(err)
		}
		if bt.FilesReady() {
			return bt
		}
		if time.Now().After(deadline) {
			tb.Fatalf("batch %s still %s", id, bt.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkPollTick1000 runs one poll tick over 1,000 active jobs, each
// with a submitted Azure batch (the simulator's clock is frozen, so every
// batch stays validating and every tick polls all of them: 1,000 reads of
// Table Storage and 1,000 GETs at Azure; nothing changes, so nothing is
// written), at several bounds on concurrency. It reports the tick's
// duration and jobs/s; the first tick, which writes every job, is logged.
func BenchmarkPollTick1000(b *testing.B) {
	const n = 1000
	frozen := simConfig(0)
	e := newEnv(b, envConfig{sim: frozen})
	ctx := e.ctx()
	seedActive(b, e, n)
	// The first tick writes every job (its first poll); later ticks write
	// only jobs whose batch changed, here none.
	start := time.Now()
	if rep, err := e.svc.Poll(ctx); err != nil || rep.Polled != n {
		b.Fatalf("first tick: %+v, %v", rep, err)
	}
	b.Logf("first tick over %d jobs (every job written), concurrency %d: %v", n, batch.DefaultConcurrency, time.Since(start))
	for _, conc := range []int{1, 4, 16, 64} {
		b.Run("concurrency="+strconv.Itoa(conc), func(b *testing.B) {
			o := e.opts
			o.Concurrency = conc
			svc, err := batch.New(o)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				rep, err := svc.Poll(ctx)
				if err != nil || rep.Polled != n || rep.Failed != 0 {
					b.Fatalf("tick: %+v, %v", rep, err)
				}
			}
			per := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(per*1000, "ms/tick")
			b.ReportMetric(n/per, "jobs/s")
		})
	}
}

// seedActive records n jobs whose one part is submitted to the simulator.
func seedActive(tb testing.TB, e *env, n int) {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	path := dir + "/in.jsonl"
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := batchfile.NewWriter(batchfile.WriterConfig{Job: "seed", Deployment: batchDep},
		func(int) (io.Writer, io.Writer, error) { return f, io.Discard, nil })
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := w.Add(batchfile.Item{Tenant: "contoso", ItemID: "x", Messages: []batchfile.Message{{Role: "user", Content: "hello"}}}); err != nil {
		tb.Fatal(err)
	}
	parts, err := w.Close()
	if err != nil {
		tb.Fatal(err)
	}
	f.Close()
	rf, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	file, err := e.azure.UploadFile(ctx, "seed.jsonl", rf, parts[0].Bytes)
	rf.Close()
	if err != nil {
		tb.Fatal(err)
	}
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	now := time.Now().UTC()
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fail := func(err error) {
				mu.Lock()
				firstErr = cmpErr(firstErr, err)
				mu.Unlock()
			}
			tn := []string{"contoso", "fabrikam"}[i%2]
			id, err := batch.NewJobID(now.Add(time.Duration(i)*time.Millisecond), rngReader{})
			if err != nil {
				fail(err)
				return
			}
			c, err := e.azure.CreateBatch(ctx, batchapi.Submission{InputFileID: file.ID, JobID: id, Part: 0})
			if err != nil {
				fail(err)
				return
			}
			j := batch.Job{ID: id, Tenant: tn, Alias: "summarize", State: batch.Submitted, Created: now, Updated: now, Items: 1, Source: "inline",
				Parts: []batch.Part{{Index: 0, Deployment: batchDep, Lines: 1, Bytes: parts[0].Bytes, EstimatedTokens: parts[0].EstimatedTokens,
					Status: batch.PartSubmitted, InputFileID: file.ID, BatchID: c.Batch.ID, AzureStatus: c.Batch.Status, SubmittedAt: now}}}
			if err := e.jobs.MarkActive(ctx, tn, id); err != nil {
				fail(err)
				return
			}
			if _, err := e.jobs.Create(ctx, j, ""); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		tb.Fatal(firstErr)
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// rngReader is crypto/rand for job ids.
type rngReader struct{}

func (rngReader) Read(p []byte) (int, error) { return rand.Read(p) }

// resetPeakRSS resets the kernel's high-water mark of this process's
// resident set (Linux 4.0+).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset peak RSS: %v", err)
	}
}

// peakRSSMB returns VmHWM, the peak resident set since the last reset, in MB.
func peakRSSMB(b *testing.B) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatalf("read peak RSS: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatalf("parse VmHWM %q: %v", v, err)
			}
			return kb * 1024 / 1e6
		}
	}
	b.Fatalf("no VmHWM in /proc/self/status")
	return 0
}
