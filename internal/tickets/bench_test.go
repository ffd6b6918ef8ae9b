package tickets_test

import (
	"fmt"
	"runtime/debug"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/testing/rss"
	"github.com/offpath/offpath/internal/testing/ticketstest"
	"github.com/offpath/offpath/internal/tickets"
)

// The benchmark day: 40 JSONL exports of 1,000 tickets (about 4 MB each,
// streamed) and 10,000 one-ticket .json files (prefetched), about 200 MB.
const (
	benchExports      = 40
	benchPerExport    = 1_000
	benchSingles      = 10_000
	benchTickets      = benchExports*benchPerExport + benchSingles
	benchMaxPeakRSSMB = 100
)

// BenchmarkCollect compares collecting a night of 50,000 tickets with the
// least any reader of the same blobs must do: list them and download them
// (sequentially, and with the collector's concurrency). The collect
// sub-benchmark reports its time relative to the fastest of each
// ("x-plain-seq", "x-plain-par") and the process's peak RSS while it runs,
// and fails if that is 100 MB or more. Run it with `make bench` or
//
//	go test -run '^$' -bench Collect -benchtime 3x ./internal/tickets/
func BenchmarkCollect(b *testing.B) {
	if testing.Short() {
		b.Skip("uploads 200 MB to Azurite; not in -short")
	}
	c := benchContainer(b)
	var size int64
	var plain [2]time.Duration
	for i, workers := range []int{1, 8} {
		b.Run(fmt.Sprintf("plain-workers=%d", workers), func(b *testing.B) {
			for b.Loop() {
				n, err := ticketstest.Download(b.Context(), c, tickets.DayPrefix(day()), workers)
				if err != nil {
					b.Fatalf("plain download: %v", err)
				}
				size = n
			}
			b.SetBytes(size)
			if d := b.Elapsed() / time.Duration(b.N); plain[i] == 0 || d < plain[i] {
				plain[i] = d // -count repeats each sub-benchmark in turn: keep the fastest
			}
		})
	}
	b.Run("collect", func(b *testing.B) {
		debug.FreeOSMemory()
		rss.Reset(b, rss.Self)
		for b.Loop() {
			var bodies int64
			res, err := tickets.NewCollector(blobstore.NewContainer(c), newMemory(), tickets.Options{}).Collect(b.Context(), day(), func(t tickets.Ticket) error {
				bodies += int64(len(t.Body))
				return nil
			})
			if err != nil {
				b.Fatalf("Collect: %v", err)
			}
			if res.New != benchTickets || res.SkippedTotal != 0 {
				b.Fatalf("Collect = %+v, want %d new tickets and no skips", res, benchTickets)
			}
		}
		perOp := b.Elapsed() / time.Duration(b.N)
		peak := rss.MB(rss.Peak(b, rss.Self))
		b.SetBytes(size)
		b.ReportMetric(float64(perOp)/float64(plain[0]), "x-plain-seq")
		b.ReportMetric(float64(perOp)/float64(plain[1]), "x-plain-par")
		b.ReportMetric(peak, "peak-RSS-MB")
		if peak >= benchMaxPeakRSSMB {
			b.Errorf("peak RSS %.1f MB, want under %d MB", peak, benchMaxPeakRSSMB)
		}
	})
}

// benchContainer returns the benchmark's container, seeding it on first use
// (once per process: -count reruns the benchmark, not the upload).
func benchContainer(b *testing.B) *container.Client {
	b.Helper()
	client, err := azblob.NewClientFromConnectionString(sharedAzurite(b).ConnectionString(), nil)
	if err != nil {
		b.Fatalf("blob client: %v", err)
	}
	c := client.ServiceClient().NewContainerClient("bench-50k")
	if err := ticketstest.SeedDay(b.Context(), c, day(), benchExports, benchPerExport, benchSingles); err != nil {
		b.Fatalf("seed the day: %v", err)
	}
	return c
}
