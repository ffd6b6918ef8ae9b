package nightly_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/rss"
	"github.com/offpath/offpath/internal/testing/ticketstest"
	"github.com/offpath/offpath/internal/tickets"
)

// The benchmark day, the same as package tickets' BenchmarkCollect: 40
// JSONL exports of 1,000 tickets (about 4 MB each) and 10,000 one-ticket
// .json files, about 200 MB.
const (
	benchExports      = 40
	benchPerExport    = 1_000
	benchSingles      = 10_000
	benchDayTickets   = benchExports*benchPerExport + benchSingles
	benchMaxPeakRSSMB = 100
)

// The child process of BenchmarkNight reads its settings from these.
const (
	childOutEnv     = "NIGHTLY_BENCH_OUT"
	childAzuriteEnv = "NIGHTLY_BENCH_AZURITE"
)

// benchContainer holds the benchmark's tickets.
const benchContainer = "bench-50k"

// BenchmarkNight measures Service.Run for a day of 50,000 tickets (200 MB)
// in Azurite, from the listing to the accepted job: the corpus written, the
// job's parts and indexes in the inputs container, then the day and the
// tickets' hashes recorded. No Azure call happens in Run; the in-process
// simulator is there because the batch service needs a client.
//
// Each night runs in a child process (this test binary, running
// TestBenchNightChild) on tables and containers of its own, so that it
// collects every ticket again and the process's peak RSS (its rusage
// maxrss) is the night's alone: the benchmark fails if it is 100 MB or
// more. pre-run-RSS-MB is the child's resident set just before Run (mostly
// the binary's pages). The run sub-benchmark's ns/op and MB/s are Run's own
// time, measured in the child without its start and set-up; collect-s,
// submit-s and record-s split it at Submit. x-plain-seq and x-plain-par
// compare it with a plain listing and download of the same blobs,
// sequential and with 8 workers (the fastest of each). Run it with
// `make bench` or
//
//	go test -run '^$' -bench Night -benchtime 2x ./internal/nightly/
func BenchmarkNight(b *testing.B) {
	if testing.Short() {
		b.Skip("uploads 200 MB to Azurite; not in -short")
	}
	conn := shared.Get(b).ConnectionString()
	c := benchDay(b, conn)
	size, err := ticketstest.Size(b.Context(), c, tickets.DayPrefix(day))
	if err != nil {
		b.Fatalf("size of the day: %v", err)
	}
	var plain [2]time.Duration
	for i, workers := range []int{1, 8} {
		b.Run(fmt.Sprintf("plain-workers=%d", workers), func(b *testing.B) {
			for b.Loop() {
				n, err := ticketstest.Download(b.Context(), c, tickets.DayPrefix(day), workers)
				if err != nil {
					b.Fatalf("plain download: %v", err)
				}
				if n != size {
					b.Fatalf("downloaded %d bytes, the day has %d", n, size)
				}
			}
			b.SetBytes(size)
			if d := b.Elapsed() / time.Duration(b.N); plain[i] == 0 || d < plain[i] {
				plain[i] = d // -count repeats each sub-benchmark in turn: keep the fastest
			}
		})
	}
	b.Run("run", func(b *testing.B) {
		var sum nightResult
		var peak, before float64
		for b.Loop() {
			r, rss := runNight(b, conn)
			sum.Run += r.Run
			sum.Collect += r.Collect
			sum.Submit += r.Submit
			sum.Record += r.Record
			sum.PartBytes = r.PartBytes
			peak = max(peak, rss)
			before = max(before, float64(r.RSSBefore)/1e6)
		}
		nf := float64(b.N)
		perOp := sum.Run / time.Duration(b.N)
		b.ReportMetric(float64(perOp), "ns/op") // Run's own time, not the child's start
		b.ReportMetric(float64(size)/1e6/perOp.Seconds(), "MB/s")
		b.ReportMetric(sum.Collect.Seconds()/nf, "collect-s")
		b.ReportMetric(sum.Submit.Seconds()/nf, "submit-s")
		b.ReportMetric(sum.Record.Seconds()/nf, "record-s")
		b.ReportMetric(float64(sum.PartBytes)/1e6, "parts-MB")
		if plain[0] > 0 && plain[1] > 0 {
			b.ReportMetric(float64(perOp)/float64(plain[0]), "x-plain-seq")
			b.ReportMetric(float64(perOp)/float64(plain[1]), "x-plain-par")
		}
		b.ReportMetric(peak, "peak-RSS-MB")
		b.ReportMetric(before, "pre-run-RSS-MB")
		// A failed benchmark prints no result line: log the numbers too.
		b.Logf("%d nights: Run %.1f s (collect %.1f, submit %.1f, record %.1f) for %.0f MB of tickets, %.1f MB/s; plain download %.1f s sequential, %.1f s with 8 workers; peak RSS %.1f MB (%.1f MB before Run)",
			b.N, perOp.Seconds(), sum.Collect.Seconds()/nf, sum.Submit.Seconds()/nf, sum.Record.Seconds()/nf,
			float64(size)/1e6, float64(size)/1e6/perOp.Seconds(), plain[0].Seconds(), plain[1].Seconds(), peak, before)
		if peak >= benchMaxPeakRSSMB {
			b.Errorf("peak RSS %.1f MB, want under %d MB", peak, benchMaxPeakRSSMB)
		}
	})
}

// nightResult is what the child process measured of one Run.
type nightResult struct {
	// Run is the whole call; Collect ends and Record starts at Submit.
	Run, Collect, Submit, Record time.Duration
	// PartBytes is the size of the job's input parts.
	PartBytes int64
	// RSSBefore is the child's resident set just before Run, in bytes.
	RSSBefore int64
}

// runNight runs one night in a child process and returns its result and the
// child's peak RSS in MB.
func runNight(b *testing.B, conn string) (nightResult, float64) {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "night.json")
	cmd := exec.CommandContext(b.Context(), exe, "-test.run=^TestBenchNightChild$", "-test.count=1", "-test.timeout=15m")
	cmd.Env = append(os.Environ(), childOutEnv+"="+out, childAzuriteEnv+"="+conn)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		b.Fatalf("night in a child process: %v\n%s", err, log.Bytes())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		b.Fatalf("the child's result: %v\n%s", err, log.Bytes())
	}
	var r nightResult
	if err := json.Unmarshal(data, &r); err != nil {
		b.Fatalf("the child's result %q: %v", data, err)
	}
	return r, rss.MB(rss.PeakExited(b, cmd.ProcessState))
}

// TestBenchNightChild is BenchmarkNight's child process: one night on a
// fresh nightly service over fresh tables and containers, its result
// written where the benchmark says. Run any other way, it does nothing.
func TestBenchNightChild(t *testing.T) {
	out := os.Getenv(childOutEnv)
	if out == "" {
		t.Skip("BenchmarkNight's child process; runs only from the benchmark")
	}
	e := newEnvOn(t, os.Getenv(childAzuriteEnv), 6000)
	timed := &timedBatches{Service: e.batch}
	e.opts.Tickets = blobstore.NewContainer(e.blobs.ServiceClient().NewContainerClient(benchContainer))
	e.opts.Batches = timed
	svc := e.service()
	logger := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	ctx, cancel := context.WithTimeout(logger.WithContext(context.Background()), 10*time.Minute)
	defer cancel()

	before := rss.Current(t, rss.Self)
	start := time.Now()
	n, err := svc.Run(ctx, day)
	end := time.Now()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n.JobID == "" || n.Collected.New != benchDayTickets || n.Collected.SkippedTotal != 0 || !n.HashesRecorded {
		t.Fatalf("Run = %+v, want a job of %d new tickets, none skipped, hashes recorded", n, benchDayTickets)
	}
	j, err := e.batch.Get(ctx, "support", n.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != batch.Accepted || j.Items != benchDayTickets {
		t.Fatalf("job %s is %s with %d items, want accepted with %d", j.ID, j.State, j.Items, benchDayTickets)
	}
	r := nightResult{Run: end.Sub(start), Collect: timed.start.Sub(start), Submit: timed.done.Sub(timed.start), Record: end.Sub(timed.done), RSSBefore: before}
	for _, p := range j.Parts {
		info, err := e.store.Stat(ctx, e.cont.Inputs, p.InputBlob)
		if err != nil {
			t.Fatalf("part %s: %v", p.InputBlob, err)
		}
		r.PartBytes += info.Size
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// The parts and the run's files take some 500 MB of Azurite's folder.
	for _, name := range []string{e.cont.Inputs, e.cont.Uploads, e.tkName} {
		if _, err := e.blobs.DeleteContainer(ctx, name, nil); err != nil {
			t.Logf("delete container %s: %v", name, err)
		}
	}
}

// timedBatches notes when Run's Submit starts and returns.
type timedBatches struct {
	*batch.Service
	start, done time.Time
}

func (b *timedBatches) Submit(ctx context.Context, t tenant.Tenant, r batch.Request) (batch.Job, bool, error) {
	b.start = time.Now()
	defer func() { b.done = time.Now() }()
	return b.Service.Submit(ctx, t, r)
}

// benchDay returns the benchmark's tickets container, seeding it on first
// use (once per process: -count reruns the benchmark, not the upload) with
// the same blobs as package tickets' benchmark.
func benchDay(b *testing.B, conn string) *container.Client {
	b.Helper()
	client, err := azblob.NewClientFromConnectionString(conn, nil)
	if err != nil {
		b.Fatalf("blob client: %v", err)
	}
	c := client.ServiceClient().NewContainerClient(benchContainer)
	if err := ticketstest.SeedDay(b.Context(), c, day, benchExports, benchPerExport, benchSingles); err != nil {
		b.Fatalf("seed the day: %v", err)
	}
	return c
}
