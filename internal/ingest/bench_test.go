package ingest_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/rss"
)

// forgetful is a status store that never remembers a version as done, so
// a benchmark can process the same document again and again.
type forgetful struct{ memStatuses }

func (f *forgetful) Get(context.Context, string, string) (document.Status, error) {
	return document.Status{}, document.ErrNotFound
}

// BenchmarkProcess measures the process function's throughput on 20 KB
// documents with 8 invocations in flight, against the simulator with its
// latency and limits off and 1,536-dimension vectors: with in-memory
// stores (the pipeline's own cost, simulator included), and with Azurite
// (blobs and tables as the dev host has them).
func BenchmarkProcess(b *testing.B) {
	doc := prose(20 << 10)
	b.Run("memory", func(b *testing.B) {
		f := newFixture(b, fixtureOptions{
			sim:    func(c *aoaisim.Config) { c.Deployments = testDeployments(1536) },
			ingest: func(o *ingest.Options) { o.Statuses = &forgetful{} },
		})
		claim := f.drop(b, "acme/bench/doc.txt", doc)
		b.SetBytes(int64(len(doc)))
		b.SetParallelism(4)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := f.deliver(claim.Body, 1); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
	})
	b.Run("azurite", func(b *testing.B) {
		ctx := context.Background()
		az := azurite.Start(b)
		client, err := azblob.NewClientFromConnectionString(az.ConnectionString(), nil)
		if err != nil {
			b.Fatal(err)
		}
		container := fmt.Sprintf("in%d", time.Now().UnixNano())
		if _, err := client.CreateContainer(ctx, container, nil); err != nil {
			b.Fatal(err)
		}
		svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: az.ConnectionString()})
		if err != nil {
			b.Fatal(err)
		}
		suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
		tenants := tablestore.NewTenants(svc, "bten"+suffix)
		acme := tenant.New("acme", "acme", time.Now())
		acme.Aliases = []string{"ingest"}
		if err := tenants.Create(ctx, acme); err != nil {
			b.Fatal(err)
		}
		store := blobstore.NewDocuments(client, container, "out"+suffix, 0)
		rules, err := claimcheck.NewRules(claimcheck.Policy{AccountURL: store.AccountURL(), Container: container})
		if err != nil {
			b.Fatal(err)
		}
		docs := tablestore.NewDocuments(svc, "bdoc"+suffix, nil)
		f := newFixture(b, fixtureOptions{
			sim: func(c *aoaisim.Config) { c.Deployments = testDeployments(1536) },
			ingest: func(o *ingest.Options) {
				o.Rules, o.Tenants, o.Statuses, o.Blobs = rules, tenants, docs, store
				o.Ledger = tablestore.NewLedger(svc, tablestore.LedgerOptions{Table: "bled" + suffix})
			},
		})
		bodies := make([][]byte, b.N)
		for i := range bodies {
			name := fmt.Sprintf("acme/bench/%06d.txt", i)
			if _, err := client.UploadBuffer(ctx, container, name, doc, nil); err != nil {
				b.Fatal(err)
			}
			c, err := f.enq.Enqueue(ctx, name, false)
			if err != nil {
				b.Fatal(err)
			}
			bodies[i] = c.Body
		}
		var next atomic.Int64
		b.SetBytes(int64(len(doc)))
		b.SetParallelism(4)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				body := bodies[next.Add(1)-1]
				if st, err := f.proc.Process(ctx, ingest.Delivery{Body: body, DeliveryCount: 1, EnqueuedTime: time.Now(), Queue: "doc-ingest"}); err != nil || st.State != document.Done {
					b.Errorf("%+v, %v", st.State, err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
	})
}

// bigDoc is a document of n bytes of prose, streamed, never held.
type bigDoc struct {
	block []byte
	n, at int64
}

func (d *bigDoc) Read(p []byte) (int, error) {
	if d.at >= d.n {
		return 0, io.EOF
	}
	off := d.at % int64(len(d.block))
	k := copy(p[:min(int64(len(p)), d.n-d.at)], d.block[off:])
	d.at += int64(k)
	return k, nil
}

// streamBlobs serves one big generated document and discards the result
// as blobstore.Documents does with its staged blocks: a block's worth buffered at most.
// Everything else, the document's version and description included, is
// memBlobs'.
type streamBlobs struct {
	*memBlobs
	size   int64
	result atomic.Int64
}

func (s *streamBlobs) Open(ctx context.Context, name, etag string) (io.ReadCloser, object.Info, error) {
	r, p, err := s.memBlobs.Open(ctx, name, etag) // pinned to etag, as memBlobs is
	if err != nil {
		return nil, p, err
	}
	r.Close()
	return io.NopCloser(&bigDoc{block: prose(1 << 20), n: s.size}), p, nil
}

func (s *streamBlobs) NewResult(string) ingest.ResultWriter { return &blockDiscard{s: s} }

type blockDiscard struct {
	s   *streamBlobs
	buf []byte
}

func (w *blockDiscard) Write(_ context.Context, p []byte) error {
	w.buf = append(w.buf, p...)
	if len(w.buf) >= blobstore.DefaultBlockSize {
		w.s.result.Add(int64(len(w.buf)))
		w.buf = w.buf[:0]
	}
	return nil
}

func (w *blockDiscard) Commit(_ context.Context, head []byte, _ string, _ map[string]string) error {
	w.s.result.Add(int64(len(head) + len(w.buf)))
	return nil
}

const bigDocBytes = 50 << 20

// processBig processes one 50 MB text document with 1,536-dimension
// vectors and returns its status and the result's size.
func processBig(tb testing.TB) (document.Status, int64) {
	tb.Helper()
	blobs := &streamBlobs{memBlobs: newMemBlobs(), size: bigDocBytes}
	f := newFixture(tb, fixtureOptions{
		sim:    func(c *aoaisim.Config) { c.Deployments = testDeployments(1536) },
		ingest: func(o *ingest.Options) { o.Blobs = blobs },
	})
	f.blobs = blobs.memBlobs
	blobs.putSized("acme/big.txt", bigDocBytes, nil)
	c, err := f.enq.Enqueue(context.Background(), "acme/big.txt", false)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := f.deliver(c.Body, 1)
	if err != nil {
		tb.Fatal(err)
	}
	return st, blobs.result.Load()
}

// TestProcess_PeakRSS processes a 50 MB text document in a child process
// (so no other test's memory counts) and requires its peak RSS, simulator
// included, to stay under 150 MB.
func TestProcess_PeakRSS(t *testing.T) {
	t.Parallel()
	if os.Getenv("OFFPATH_INGEST_CHILD") != "" {
		t.Skip("the child runs only TestProcess_Child")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("peak RSS is read from /proc (Linux)")
	}
	if raceEnabled || testing.Short() {
		t.Skip("the race detector multiplies memory and time; make bench reports the figures")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestProcess_Child$", "-test.v")
	cmd.Env = append(os.Environ(), "OFFPATH_INGEST_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var rss, chunks, result int64
	for line := range strings.Lines(string(out)) {
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "ingest: peak RSS %d chunks %d result %d", &rss, &chunks, &result); err == nil {
			break
		}
	}
	if rss == 0 {
		t.Fatalf("the child reported no peak RSS:\n%s", out)
	}
	t.Logf("50 MB document: %d chunks, a %d MB result, peak RSS %d MB", chunks, result>>20, rss>>20)
	if rss >= 150<<20 {
		t.Errorf("peak RSS %d MB, want under 150 MB", rss>>20)
	}
}

// TestProcess_Child is TestProcess_PeakRSS's child.
func TestProcess_Child(t *testing.T) {
	if os.Getenv("OFFPATH_INGEST_CHILD") == "" {
		t.Skip("run by TestProcess_PeakRSS")
	}
	st, result := processBig(t)
	fmt.Printf("ingest: peak RSS %d chunks %d result %d\n", rss.Peak(t, rss.Self), st.Chunks, result)
}

// BenchmarkProcess50MB reports the time and peak RSS of processing one 50
// MB text document (VmHWM, reset first; the simulator is in the process).
func BenchmarkProcess50MB(b *testing.B) {
	var st document.Status
	var result int64
	rss.Reset(b, rss.Self)
	for b.Loop() {
		st, result = processBig(b)
	}
	b.SetBytes(bigDocBytes)
	b.ReportMetric(float64(rss.Peak(b, rss.Self))/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(st.Chunks), "chunks")
	b.ReportMetric(float64(result)/(1<<20), "result-MB")
}
