package batchfile_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/ledger"
)

// outputFile renders n output lines shaped like Azure's (and the
// simulator's): a chat completion with filter annotations and full usage,
// about 1.1 KB each; every 50th line is a prompt refusal.
func outputFile(n int) []byte {
	answer := strings.Repeat("The ticket reports a printer fire; facilities were called. ", 8)
	var buf bytes.Buffer
	for i := range n {
		if i%50 == 49 {
			fmt.Fprintf(&buf, `{"custom_id":"job1.0.%d.Qm9vdF9j","response":{"status_code":400,"request_id":"5e1c%08d-aaaa-bbbb-cccc-000000000000","body":{"error":{"code":"content_filter","message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","param":"prompt","type":null,"status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"medium"}}}}}},"error":null}`+"\n", i, i)
			continue
		}
		fmt.Fprintf(&buf, `{"custom_id":"job1.0.%d.Qm9vdF9j","response":{"status_code":200,"request_id":"5e1c%08d-aaaa-bbbb-cccc-000000000000","body":{"id":"chatcmpl-%d","object":"chat.completion","created":1772352000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_1","choices":[{"index":0,"finish_reason":"stop","logprobs":null,"message":{"role":"assistant","content":%q,"refusal":null,"annotations":[]},"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}}],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"jailbreak":{"filtered":false,"detected":false}}}],"usage":{"prompt_tokens":412,"completion_tokens":120,"total_tokens":532,"prompt_tokens_details":{"audio_tokens":0,"cached_tokens":128},"completion_tokens_details":{"accepted_prediction_tokens":0,"audio_tokens":0,"reasoning_tokens":0,"rejected_prediction_tokens":0}}}},"error":null}`+"\n", i, i, i, answer)
	}
	return buf.Bytes()
}

// onlyReader hides bytes.Reader's WriteTo so that a copy goes through a
// buffer, as a copy from a network stream does.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// BenchmarkParse100k parses a 100,000-line output file and reports lines/s
// and the cost relative to two baselines over the same bytes in the same
// run: a buffered copy, and splitting into lines without decoding.
func BenchmarkParse100k(b *testing.B) {
	data := outputFile(100_000)
	var parse, copyT, split time.Duration
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		buf := make([]byte, 256<<10)
		if _, err := io.CopyBuffer(io.Discard, onlyReader{bytes.NewReader(data)}, buf); err != nil {
			b.Fatal(err)
		}
		copyT += time.Since(start)

		start = time.Now()
		br := bufio.NewReaderSize(onlyReader{bytes.NewReader(data)}, 256<<10)
		lines := 0
		for {
			_, err := br.ReadSlice('\n')
			if err != nil {
				break
			}
			lines++
		}
		split += time.Since(start)

		start = time.Now()
		r := batchfile.NewReader(onlyReader{bytes.NewReader(data)}, 0)
		var n int
		var sum ledger.Usage
		for {
			res, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			sum.Add(res.Usage)
			n++
		}
		parse += time.Since(start)
		if n != 100_000 || lines != 100_000 || sum.PromptTokens != 98*412*1000 {
			b.Fatalf("parsed %d lines (%d split), prompt tokens %d", n, lines, sum.PromptTokens)
		}
	}
	b.ReportMetric(float64(100_000*b.N)/parse.Seconds(), "lines/s")
	b.ReportMetric(float64(len(data))/1e6, "file-MB")
	b.ReportMetric(parse.Seconds()/copyT.Seconds(), "x-copy")
	b.ReportMetric(parse.Seconds()/split.Seconds(), "x-linesplit")
}

// BenchmarkWrite100k writes 100,000 request lines of about 1.5 KB.
func BenchmarkWrite100k(b *testing.B) {
	prompt := strings.Repeat("The printer on floor three is on fire again. ", 30)
	it := item("tenant", "", prompt)
	var bytesOut int64
	for range b.N {
		w, err := batchfile.NewWriter(batchfile.WriterConfig{Job: "bench", Deployment: "gpt-4o-mini-batch"},
			func(int) (io.Writer, io.Writer, error) { return io.Discard, io.Discard, nil })
		if err != nil {
			b.Fatal(err)
		}
		for i := range 100_000 {
			it.ItemID = fmt.Sprint(i)
			if _, err := w.Add(it); err != nil {
				b.Fatal(err)
			}
		}
		parts, err := w.Close()
		if err != nil {
			b.Fatal(err)
		}
		bytesOut = parts[0].Bytes
	}
	b.SetBytes(bytesOut)
	b.ReportMetric(float64(100_000*b.N)/b.Elapsed().Seconds(), "lines/s")
}
