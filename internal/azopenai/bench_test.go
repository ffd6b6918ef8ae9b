package azopenai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/rss"
)

// peakSampler records the largest heap in use and resident set seen every
// 5 ms while it runs.
type peakSampler struct {
	stop     chan struct{}
	done     sync.WaitGroup
	heap, rs uint64
}

func samplePeaks() *peakSampler {
	p := &peakSampler{stop: make(chan struct{})}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			p.heap = max(p.heap, s[0].Value.Uint64())
			if n, err := rss.Resident(rss.Self); err == nil {
				p.rs = max(p.rs, uint64(n))
			}
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *peakSampler) end() { close(p.stop); p.done.Wait() }

// BenchmarkWriteUpload100k writes a 100,000-line, ~150 MB input with
// batchfile and uploads it to the simulator with UploadFile, and in the same
// iteration copies the written file to another with io.Copy (the plain
// write of the same bytes), POSTs it with plain net/http to a loopback sink
// that writes the body to disk, and uploads it with UploadFile to that same
// sink. upload/plain compares against the simulator (which also parses the
// multipart form and counts lines); sink/plain isolates the client's cost;
// total/plain is the write and the upload over the plain write and the
// plain POST. It also reports the peak heap and RSS of the process (client
// and simulator together).
func BenchmarkWriteUpload100k(b *testing.B) {
	dir := b.TempDir()
	sp := 0.0
	cfg := simConfig()
	cfg.Speed = &sp
	env := newSim(b, cfg, nil)
	c := env.client(b, azopenai.BatchConfig{APIKey: aoaisim.DefaultKey, Surface: azopenai.Classic})
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.CreateTemp(dir, "plain-*")
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer os.Remove(f.Name())
		defer f.Close()
		n, err := io.Copy(f, r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"file-sink","object":"file","bytes":%d,"created_at":0,"filename":"x","purpose":"batch","status":"processed"}`, n)
	}))
	b.Cleanup(sink.Close)
	toSink := (&simEnv{url: sink.URL}).client(b, azopenai.BatchConfig{APIKey: "k", Surface: azopenai.Classic})
	prompt := strings.Repeat("The printer on floor three is on fire again. ", 30)
	ctx := context.Background()
	var write, plainWrite, ours, oursSink, plain time.Duration
	var size int64
	peaks := samplePeaks()
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		path := filepath.Join(dir, fmt.Sprintf("in-%d.jsonl", i))
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w, err := batchfile.NewWriter(batchfile.WriterConfig{Job: "bench", Deployment: batchDep},
			func(int) (io.Writer, io.Writer, error) { return f, io.Discard, nil })
		if err != nil {
			b.Fatal(err)
		}
		for j := range 100_000 {
			if _, err := w.Add(chatItem("tenant", strconv.Itoa(j), prompt)); err != nil {
				b.Fatal(err)
			}
		}
		parts, err := w.Close()
		if err != nil || len(parts) != 1 {
			b.Fatalf("parts %v, err %v", parts, err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		write += time.Since(start)
		size = parts[0].Bytes

		start = time.Now()
		copyFile(b, path, path+".plain")
		plainWrite += time.Since(start)
		os.Remove(path + ".plain")

		start = time.Now()
		in, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, sink.URL, in)
		if err != nil {
			b.Fatal(err)
		}
		req.ContentLength = size
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			b.Fatalf("plain POST: %v %v", err, resp)
		}
		resp.Body.Close()
		in.Close()
		plain += time.Since(start)

		start = time.Now()
		in, err = os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		file, err := c.UploadFile(ctx, "bench.jsonl", in, size)
		if err != nil || file.Bytes != size {
			b.Fatalf("UploadFile: %+v %v", file, err)
		}
		in.Close()
		ours += time.Since(start)
		if err := c.DeleteFile(ctx, file.ID); err != nil {
			b.Fatal(err)
		}

		start = time.Now()
		in, err = os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := toSink.UploadFile(ctx, "bench.jsonl", in, size); err != nil {
			b.Fatalf("UploadFile to sink: %v", err)
		}
		in.Close()
		oursSink += time.Since(start)
		os.Remove(path)
	}
	b.StopTimer()
	peaks.end()
	n := float64(b.N)
	b.ReportMetric(float64(size)/1e6, "file-MB")
	b.ReportMetric(write.Seconds()/n, "write-s")
	b.ReportMetric(plainWrite.Seconds()/n, "plain-write-s")
	b.ReportMetric(ours.Seconds()/n, "upload-s")
	b.ReportMetric(plain.Seconds()/n, "plain-s")
	b.ReportMetric(oursSink.Seconds()/n, "upload-sink-s")
	b.ReportMetric(ours.Seconds()/plain.Seconds(), "upload/plain")
	b.ReportMetric(oursSink.Seconds()/plain.Seconds(), "sink/plain")
	b.ReportMetric((write+ours).Seconds()/(plainWrite+plain).Seconds(), "total/plain")
	b.ReportMetric(float64(peaks.heap)/1e6, "peak-heap-MB")
	b.ReportMetric(float64(peaks.rs)/1e6, "peak-RSS-MB")
	b.ReportMetric(rss.MB(rss.Peak(b, rss.Self)), "hwm-RSS-MB")
}

// copyFile copies src to a new file dst with io.Copy: the plain write of
// the bytes batchfile wrote (neither syncs).
func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	in, err := os.Open(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
}
