package aoaisim_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/poll"
	"github.com/offpath/offpath/internal/testing/rss"
)

// startBenchServer starts an unlimited simulator on a loopback port, or uses
// AOAISIM_BENCH_URL (e.g. the cmd/aoaisim binary in another process, so that
// client and server CPU are not mixed in one process).
func startBenchServer(b *testing.B) string {
	b.Helper()
	if u := os.Getenv("AOAISIM_BENCH_URL"); u != "" {
		return u
	}
	srv, err := aoaisim.New(aoaisim.Config{Deployments: testDeployments(), DisableRateLimits: true}, zerolog.Nop())
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		b.Fatalf("Start: %v", err)
	}
	return url
}

// BenchmarkChatCompletions measures synchronous chat throughput over real
// loopback HTTP with limits off, with a lean keep-alive client so that the
// server, not the client, dominates. Reports req/s.
func BenchmarkChatCompletions(b *testing.B) {
	url := startBenchServer(b)
	target := url + "/openai/deployments/" + chatDep + "/chat/completions?api-version=2024-10-21"
	body := []byte(`{"messages":[{"role":"system","content":"You summarise support tickets in one sentence."},{"role":"user","content":"Ticket 4711: the printer on floor 3 prints every page twice and then jams. Users are unhappy."}],"max_tokens":64}`)
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512}}
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
			req.Header.Set("api-key", aoaisim.DefaultKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// BenchmarkChatCompletionsOpenAIGo is the same load through the openai-go
// client (classic surface), which costs more CPU on the client side.
func BenchmarkChatCompletionsOpenAIGo(b *testing.B) {
	url := startBenchServer(b)
	c := classicClient(url)
	params := chatParams(chatDep, "Ticket 4711: the printer on floor 3 prints every page twice and then jams.")
	params.MaxTokens = openai.Int(64)
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Chat.Completions.New(context.Background(), params); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// BenchmarkBatchLarge runs a 100,000-line (~100 MB) batch and a 10,000-line
// one through the cmd/aoaisim binary in its own process and reports that
// process's peak RSS (VmHWM), so that the client's buffers do not count.
// Run with -benchtime=1x; Linux only.
func BenchmarkBatchLarge(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "aoaisim")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/offpath/offpath/cmd/aoaisim").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for _, lines := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("lines=%d", lines), func(b *testing.B) {
			for range b.N {
				runLargeBatch(b, bin, dir, lines)
			}
		})
	}
}

func runLargeBatch(b *testing.B, bin, dir string, lines int) {
	input := filepath.Join(dir, fmt.Sprintf("input-%d.jsonl", lines))
	size := writeLargeInput(b, input, lines)
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-speed", "10000", "-no-limits", "-log-level", "warn",
		"-data-dir", filepath.Join(dir, fmt.Sprintf("data-%d", lines)),
		"-deployment", "name="+batchDep+",model=gpt-4o-mini,type=global-batch")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatalf("start simulator: %v", err)
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	url := readURL(b, stdout)
	idle := rss.Peak(b, cmd.Process.Pid)

	c := classicClient(url)
	ctx := context.Background()
	start := time.Now()
	f, err := os.Open(input)
	if err != nil {
		b.Fatal(err)
	}
	fo, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(f, "big.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	f.Close()
	if err != nil {
		b.Fatalf("upload: %v", err)
	}
	uploaded := time.Since(start)
	bt, err := createBatch(ctx, c, fo.ID)
	if err != nil {
		b.Fatalf("create: %v", err)
	}
	poll.Until(b, 10*time.Minute, "the batch to complete", func() bool {
		if bt, err = c.Batches.Get(ctx, bt.ID); err != nil {
			b.Fatalf("get: %v", err)
		}
		if bt.Status == "failed" {
			b.Fatalf("batch failed: %+v", bt.Errors.Data)
		}
		return bt.Status == "completed"
	})
	ran := time.Since(start) - uploaded
	resp, err := c.Files.Content(ctx, bt.OutputFileID)
	if err != nil {
		b.Fatalf("content: %v", err)
	}
	out, n := countLines(b, resp.Body)
	resp.Body.Close()
	if n != lines || bt.RequestCounts.Completed != int64(lines) {
		b.Fatalf("output has %d lines, counts %+v; want %d", n, bt.RequestCounts, lines)
	}
	peak := rss.Peak(b, cmd.Process.Pid)
	b.ReportMetric(float64(size)/1e6, "input-MB")
	b.ReportMetric(float64(out)/1e6, "output-MB")
	b.ReportMetric(uploaded.Seconds(), "upload-s")
	b.ReportMetric(ran.Seconds(), "run-s")
	b.ReportMetric(float64(idle)/(1<<20), "idle-RSS-MB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
}

// writeLargeInput writes lines of about 1 KB each and returns the size.
func writeLargeInput(b *testing.B, path string, lines int) int64 {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	filler := strings.Repeat("The printer on floor three jams after every second page. ", 15)
	for i := range lines {
		fmt.Fprintf(w, `{"custom_id":"doc-%06d","method":"POST","url":"/v1/chat/completions","body":{"model":"%s","max_tokens":64,"messages":[{"role":"system","content":"Summarise the ticket."},{"role":"user","content":"Ticket %d. %s"}]}}`+"\n",
			i, batchDep, i, filler)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	return st.Size()
}

func readURL(b *testing.B, r io.Reader) string {
	sc := bufio.NewScanner(r)
	re := regexp.MustCompile(`listening on (http://\S+)`)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, r) }()
			return m[1]
		}
	}
	b.Fatal("simulator printed no URL")
	return ""
}

func countLines(b *testing.B, r io.Reader) (bytes int64, lines int) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		chunk, err := br.ReadSlice('\n')
		bytes += int64(len(chunk))
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			lines++
		}
		if err == io.EOF {
			return bytes, lines
		}
		if err != nil && err != bufio.ErrBufferFull {
			b.Fatal(err)
		}
	}
}
