package batch_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/cputime"
	"github.com/offpath/offpath/internal/testing/poll"
	"github.com/offpath/offpath/internal/testing/rss"
)

const benchMaxPeakRSSMB = 100

// harvestMaxPeakRSSMB is the harvest's goal: peak RSS of the process
// (simulator included) under 48 MB, whatever the number of lines.
const harvestMaxPeakRSSMB = 48

// BenchmarkHarvest harvests a finished batch of 10,000 and of 100,000 lines
// in one poll tick: copy Azure's output into Azurite (hashed and parsed as
// it goes by), join every line to its item through the part's index, write
// the per-item results, record the ledger row, delete the Azure files and
// mark the job. Its baseline, in the same iteration and before the
// harvest, is a raw copy of the same output between the same two
// endpoints by the plainest means: one HTTP GET of the simulator's file
// content streamed into an azblob upload to the same container with the
// SDK's defaults, with no hashing and no parsing. It reports both times, their ratio, lines/s and the
// process's peak RSS during the harvest (simulator included), and fails
// when the peak reaches 48 MB. Beside the wall times, which vary with the
// machine's load, it reports what varies much less: the CPU time of this
// process (the simulator's included) and of Azurite, and the requests
// sent; each run's figures are logged with the load average. The raw copy
// is deleted before the harvest, and each iteration deletes the job's blobs
// after it (outside the timed phases), so that every phase finds Azurite,
// which keeps every blob in its memory, holding the same. Run it with
// `make bench` or
//
//	go test -run '^$' -bench Harvest -benchtime 2x ./internal/batch/
func BenchmarkHarvest(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("lines="+strconv.Itoa(n), func(b *testing.B) { benchHarvest(b, n) })
	}
}

func benchHarvest(b *testing.B, n int) {
	cfg := simConfig(3000)
	cfg.Batch.LinesPerMinute = 10_000_000
	e := newEnv(b, envConfig{sim: cfg})
	raw, err := azblob.NewClientFromConnectionString(sharedAzurite(b).ConnectionString(),
		&azblob.ClientOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{countRequests{e.storage}}}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := raw.CreateContainer(context.Background(), e.cont.Results, nil); err != nil {
		b.Fatal(err)
	}
	items := func() []batch.Item {
		in := make([]batch.Item, n)
		for i := range in {
			in[i] = batch.Item{ID: "ticket-" + strconv.Itoa(i), Prompt: fmt.Sprintf("Ticket %d: the printer on floor %d prints only blank pages since Tuesday's update; please advise.", i, i%9)}
		}
		return in
	}
	var harvest, plain work
	var outBytes int64
	var peak, before float64
	b.StopTimer()
	for i := range b.N {
		j := e.submit("contoso", items()) // the items are garbage before the harvest
		e.pollUntil(2*time.Minute, func(j batch.Job) bool { return j.Parts[0].Status == batch.PartSubmitted }, j.ID)
		bt := waitBatch(b, e, e.get(j.ID).Parts[0].BatchID)

		load := cputime.LoadAverage()
		plainName := fmt.Sprintf("plain/%d.jsonl", i)
		p := e.measure(b, func() { outBytes = rawCopy(b, e, raw, bt.OutputFileID, plainName) })
		// Azurite keeps every blob in its memory: the harvest finds it as
		// the raw copy did.
		if err := e.blobs.Delete(context.Background(), e.cont.Results, plainName); err != nil {
			b.Fatal(err)
		}

		ctx := e.ctx() // its own deadline, from here: a busy machine is slow
		debug.FreeOSMemory()
		rss.Reset(b, rss.Self)
		before = max(before, rss.MB(rss.Current(b, rss.Self)))
		b.StartTimer()
		h := e.measure(b, func() {
			if _, err := e.svc.Poll(ctx); err != nil {
				b.Fatal(err)
			}
		})
		b.StopTimer()
		peak = max(peak, rss.MB(rss.Peak(b, rss.Self)))
		got := e.get(j.ID)
		if got.State != batch.Harvested || got.Counts().OK != int64(n) {
			b.Fatalf("after the harvest tick: %s, %+v", got.State, got.Counts())
		}
		for _, c := range []string{e.cont.Inputs, e.cont.Results} {
			if err := e.blobs.DeletePrefix(context.Background(), c, "contoso/"+j.ID+"/"); err != nil {
				b.Fatal(err)
			}
		}
		b.Logf("run %d, load %s: harvest %s against the raw copy %s", i+1, load, h.against(p), p)
		harvest.add(h)
		plain.add(p)
	}
	secs := harvest.wall.Seconds() / float64(b.N)
	b.ReportMetric(float64(n)/secs, "lines/s")
	b.ReportMetric(secs, "harvest-s")
	b.ReportMetric(plain.wall.Seconds()/float64(b.N), "raw-copy-s")
	b.ReportMetric(harvest.wall.Seconds()/plain.wall.Seconds(), "x-raw-copy")
	b.ReportMetric(harvest.cpu().Seconds()/plain.cpu().Seconds(), "cpu-x-raw-copy")
	b.ReportMetric(float64(harvest.requests)/float64(b.N), "harvest-requests")
	b.ReportMetric(float64(plain.requests)/float64(b.N), "raw-copy-requests")
	b.ReportMetric(float64(outBytes)/1e6, "output-MB")
	b.ReportMetric(peak, "peak-RSS-MB")
	b.Logf("%d lines, %.1f MB of output, %d runs: harvest %s against the raw copy between the same endpoints %s; peak RSS %.1f MB (%.1f MB resident before)",
		n, float64(outBytes)/1e6, b.N, harvest.against(plain), plain, peak, before)
	if peak >= harvestMaxPeakRSSMB {
		b.Errorf("peak RSS %.1f MB during the harvest, want under %d MB", peak, harvestMaxPeakRSSMB)
	}
}

// work is what a phase took: its wall time, the CPU time of this process
// (the simulator's included) and of Azurite, and the requests sent to
// both. On a shared machine the wall time varies with the load; the CPU
// time and the requests much less.
type work struct {
	wall, self, azurite time.Duration
	requests            int64
}

// measure runs f and returns what it took.
func (e *env) measure(tb testing.TB, f func()) work {
	tb.Helper()
	az := sharedAzurite(tb).PID()
	self0, az0, req0 := cputime.Of(tb, cputime.Self), cputime.Of(tb, az), e.requests()
	start := time.Now()
	f()
	return work{wall: time.Since(start), self: cputime.Of(tb, cputime.Self) - self0, azurite: cputime.Of(tb, az) - az0,
		requests: e.requests() - req0}
}

func (w *work) add(o work) {
	w.wall, w.self, w.azurite, w.requests = w.wall+o.wall, w.self+o.self, w.azurite+o.azurite, w.requests+o.requests
}

func (w work) cpu() time.Duration { return w.self + w.azurite }

func (w work) String() string {
	return fmt.Sprintf("%.2f s (CPU %.2f s: process %.2f + Azurite %.2f; %d requests)",
		w.wall.Seconds(), w.cpu().Seconds(), w.self.Seconds(), w.azurite.Seconds(), w.requests)
}

// against is w beside its baseline: w and the ratios of wall and CPU time.
func (w work) against(base work) string {
	return fmt.Sprintf("%s: %.2f× (CPU %.2f×)", w, w.wall.Seconds()/base.wall.Seconds(), w.cpu().Seconds()/base.cpu().Seconds())
}

// rawCopy copies the simulator's file content into the results container
// with one plain GET streamed into an azblob upload, and returns its size.
func rawCopy(tb testing.TB, e *env, raw *azblob.Client, fileID, name string) int64 {
	tb.Helper()
	ctx := context.Background()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.simURL+"/openai/v1/files/"+fileID+"/content", nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("api-key", aoaisim.DefaultKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		tb.Fatalf("GET file content: %v %v", err, res)
	}
	defer res.Body.Close()
	if _, err := raw.UploadStream(ctx, e.cont.Results, name, res.Body, nil); err != nil {
		tb.Fatalf("raw copy: %v", err)
	}
	return res.ContentLength
}

// waitBatch waits until the simulator's batch is finished with its files.
func waitBatch(tb testing.TB, e *env, id string) batch.AzureBatch {
	tb.Helper()
	var bt batch.AzureBatch
	if !poll.Within(2*time.Minute, func() bool {
		var err error
		if bt, err = e.azure.GetBatch(context.Background(), id); err != nil {
			tb.Fatal(err)
		}
		return bt.FilesReady()
	}) {
		tb.Fatalf("batch %s still %s", id, bt.Status)
	}
	return bt
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
			c, err := e.azure.CreateBatch(ctx, batch.Submission{InputFileID: file.ID, JobID: id, Part: 0})
			if err != nil {
				fail(err)
				return
			}
			j := batch.Job{ID: id, Tenant: tn, Alias: "summarize", State: batch.Submitted, Created: now, Updated: now, Items: 1, Source: "inline",
				Parts: []batch.Part{{Index: 0, Deployment: batchDep, Lines: 1, Bytes: parts[0].Bytes, EstimatedTokens: parts[0].EstimatedTokens,
					Status: batch.PartSubmitted, InputFileID: file.ID, BatchID: c.Batch.ID, AzureStatus: c.Batch.Status, SubmittedAt: c.Batch.CreatedAt}}}
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
