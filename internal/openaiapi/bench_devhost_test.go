package openaiapi

import (
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"testing"

	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/local/devhost"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/testing/apptest"
	"github.com/offpath/offpath/internal/testing/rss"
)

// BenchmarkUpload150MBHandler streams a 150 MB batch input, with its
// Content-Length (the host hands a chunked body to the handler empty),
// through the dev host to the real handler binary, which validates
// every line and stores the bytes and the items in Azurite; it reports the
// handler process's own peak RSS. The baseline, in the same run, writes
// the same bytes straight to two blobs of the same Azurite (as the handler
// stores the file and its items), from this process, without HTTP,
// parsing or checks; its peak RSS is this process's (generator, dev host
// idle, blob writer). idle-RSS-MB is the handler's resident set as the
// upload starts.
func BenchmarkUpload150MBHandler(b *testing.B) {
	s := apptest.Start(b, apptest.Config{Unchecked: true, Settings: map[string]string{
		devhost.RequestBodyLimitSetting: strconv.Itoa(1<<30 + 1<<20)}})
	url := s.URL + "/api/openai/v1/files"
	const boundary = "offpath-bench-boundary"
	size, err := writeUpload(new(counter), boundary)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("handler-via-devhost", func(b *testing.B) {
		var peak, idle int64
		for range b.N {
			pid := s.Host.HandlerPID()
			if pid == 0 {
				b.Fatal("no handler process")
			}
			rss.Reset(b, pid)
			idle = max(idle, rss.Peak(b, pid)) // just reset: the RSS now
			pr, pw := io.Pipe()
			go func() {
				_, err := writeUpload(pw, boundary)
				pw.CloseWithError(err)
			}()
			req, err := http.NewRequest(http.MethodPost, url, pr)
			if err != nil {
				b.Fatal(err)
			}
			req.ContentLength = size
			req.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
			req.Header.Set("Authorization", "Bearer "+s.Keys["contoso"])
			req.Header.Set("x-functions-key", apptest.FunctionKey)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Fatalf("upload: %d %s", res.StatusCode, body)
			}
			if s.Host.HandlerPID() != pid {
				b.Fatal("the handler restarted during the upload")
			}
			peak = max(peak, rss.Peak(b, pid))
		}
		b.SetBytes(benchBytes)
		b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
		b.ReportMetric(float64(idle)/(1<<20), "idle-RSS-MB")
	})
	store := blobstore.New(s.Blobs, blobstore.Options{BlockSize: 1 << 20})
	b.Run("baseline-plain-blob-writes", func(b *testing.B) {
		var peak int64
		for i := range b.N {
			rss.Reset(b, rss.Self)
			var ws [2]object.Writer
			for k := range ws {
				var err error
				if ws[k], err = store.Create(context.Background(), "baseline", fmt.Sprintf("plain-%d-%d.jsonl", i, k), nil); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := writeInput(io.MultiWriter(ws[0], ws[1]), benchBytes); err != nil {
				b.Fatal(err)
			}
			for _, w := range ws {
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			peak = max(peak, rss.Peak(b, rss.Self))
		}
		b.SetBytes(benchBytes)
		b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
	})
}

// writeUpload writes the multipart upload of the benchmark's input to w
// and returns its size.
func writeUpload(w io.Writer, boundary string) (int64, error) {
	c := &counter{w: w}
	mw := multipart.NewWriter(c)
	if err := mw.SetBoundary(boundary); err != nil {
		return 0, err
	}
	if err := mw.WriteField("purpose", "batch"); err != nil {
		return c.n, err
	}
	part, err := mw.CreateFormFile("file", "big.jsonl")
	if err != nil {
		return c.n, err
	}
	if _, err := writeInput(part, benchBytes); err != nil {
		return c.n, err
	}
	return c.n, mw.Close()
}

// counter counts the bytes written through it to w (none if w is nil).
type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	if c.w != nil {
		n, err := c.w.Write(p)
		c.n += int64(n)
		return n, err
	}
	c.n += int64(len(p))
	return len(p), nil
}
