package tickets_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

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
				size = download(b, c, workers)
			}
			b.SetBytes(size)
			if d := b.Elapsed() / time.Duration(b.N); plain[i] == 0 || d < plain[i] {
				plain[i] = d // -count repeats each sub-benchmark in turn: keep the fastest
			}
		})
	}
	b.Run("collect", func(b *testing.B) {
		debug.FreeOSMemory()
		resetPeakRSS(b)
		for b.Loop() {
			var bodies int64
			res, err := tickets.NewCollector(c, tickets.NewMemory(), tickets.Options{}).Collect(b.Context(), day(), func(t tickets.Ticket) error {
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
		peak := peakRSSMB(b)
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
	ctx := context.Background()
	if _, err := c.NewBlobClient("seeded").GetProperties(ctx, nil); err == nil {
		return c
	}
	if _, err := c.Create(ctx, nil); err != nil {
		b.Fatalf("create container: %v", err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var buf bytes.Buffer
	for e := range benchExports {
		buf.Reset()
		for i := range benchPerExport {
			writeTicket(&buf, fmt.Sprintf("E%02d-%04d", e, i), rng)
			buf.WriteByte('\n')
		}
		upload(b, c, fmt.Sprintf("2026-03-14/export-%02d.jsonl", e), buf.Bytes())
	}
	names := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			var buf bytes.Buffer
			rng := rand.New(rand.NewPCG(3, 4))
			for i := range names {
				buf.Reset()
				writeTicket(&buf, fmt.Sprintf("S%05d", i), rng)
				upload(b, c, fmt.Sprintf("2026-03-14/single/S%05d.json", i), buf.Bytes())
			}
		})
	}
	for i := range benchSingles {
		names <- i
	}
	close(names)
	wg.Wait()
	upload(b, c, "seeded", nil)
	return c
}

// writeTicket writes one ticket of about 4 KB of plausible text.
func writeTicket(w *bytes.Buffer, id string, rng *rand.Rand) {
	words := []string{"printer", "invoice", "login", "fails", "since", "Monday", "refund", "the", "a", "customer",
		"café", "\"quoted\"", "error", "500", "again", "please", "urgent", "VPN", "reset", "password"}
	var body strings.Builder
	n := 300 + rng.IntN(600)
	for i := range n {
		if i > 0 && i%40 == 0 {
			body.WriteString(".\n")
		}
		body.WriteString(words[rng.IntN(len(words))])
		body.WriteByte(' ')
	}
	doc := map[string]any{
		"id": id, "subject": "Ticket " + id, "body": body.String(), "customer": "Customer " + strconv.Itoa(rng.IntN(500)),
		"created_at": "2026-03-14T09:30:00Z", "priority": "normal", "tags": []string{"bench"},
	}
	if err := json.NewEncoder(w).Encode(doc); err != nil {
		panic(err)
	}
	w.Truncate(w.Len() - 1) // Encode's newline
}

func upload(b *testing.B, c *container.Client, name string, data []byte) {
	if _, err := c.NewBlockBlobClient(name).UploadBuffer(context.Background(), data, nil); err != nil {
		b.Errorf("upload %s: %v", name, err)
	}
}

// download lists the day and reads every blob to io.Discard with the given
// number of workers, returning the bytes read.
func download(b *testing.B, c *container.Client, workers int) int64 {
	b.Helper()
	ctx := b.Context()
	names := make(chan string, 64)
	var total int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var n int64
			for name := range names {
				resp, err := c.NewBlobClient(name).DownloadStream(ctx, nil)
				if err != nil {
					b.Errorf("download %s: %v", name, err)
					continue
				}
				m, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil {
					b.Errorf("read %s: %v", name, err)
				}
				n += m
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	prefix := tickets.DayPrefix(day())
	pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			b.Fatalf("list: %v", err)
		}
		for _, item := range page.Segment.BlobItems {
			names <- *item.Name
		}
	}
	close(names)
	wg.Wait()
	return total
}

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
