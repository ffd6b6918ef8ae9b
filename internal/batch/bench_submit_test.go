package batch_test

import (
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/cputime"
	"github.com/offpath/offpath/internal/testing/rss"
)

// BenchmarkSubmit takes a corpus of 10,000 and of 100,000 lines (about
// 1.5 KB each) that a tenant placed in its uploads area from the request
// to Azure: Submit (read the corpus, check every item, rewrite it as
// Global Batch lines with the deployment and the custom_id, write the part
// and its index to platform storage, hashing as it writes) and then the
// admission tick (stream the stored part to the simulator's Files API,
// create the batch). Its floor, in the same iteration, is the same bytes
// between the same endpoints by the plainest means: read the corpus once
// (a download of the blob into io.Discard), write the part durably once (an
// azblob upload of the part's bytes, with the SDK's defaults, to the same
// inputs container) and upload it once (one multipart POST of the part's
// bytes to the simulator's Files API); the part's bytes come from a local
// copy made outside the timed phases. It reports both halves beside their
// floors, the whole over the floor, and the peak RSS of each half
// (simulator included; its clock is frozen so the batch does not run);
// and, as BenchmarkHarvest does, the CPU time and requests of each phase,
// each run's figures logged with the load average.
//
//	go test -run '^$' -bench 'Submit$' -benchtime 2x ./internal/batch/
func BenchmarkSubmit(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("lines="+strconv.Itoa(n), func(b *testing.B) { benchSubmit(b, n) })
	}
}

func benchSubmit(b *testing.B, n int) {
	e := newEnv(b, envConfig{sim: simConfig(0)})
	ctx := context.Background()
	raw, err := azblob.NewClientFromConnectionString(sharedAzurite(b).ConnectionString(),
		&azblob.ClientOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{countRequests{e.storage}}}})
	if err != nil {
		b.Fatal(err)
	}
	w, err := e.blobs.Create(ctx, e.cont.Uploads, "contoso/corpus.jsonl", nil)
	if err != nil {
		b.Fatal(err)
	}
	prompt := strings.Repeat("The printer on floor three is on fire again. ", 30)
	for i := range n {
		fmt.Fprintf(w, `{"id":"doc-%d","prompt":"%s %d"}`+"\n", i, prompt, i)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	corpusBytes := w.Size()
	local := filepath.Join(b.TempDir(), "part.jsonl")

	var submit, admit, read, write, upload work
	var peakSubmit, peakAdmit float64
	var size int64
	b.StopTimer()
	for i := range b.N {
		load := cputime.LoadAverage()
		debug.FreeOSMemory()
		rss.Reset(b, rss.Self)
		b.StartTimer()
		var j batch.Job
		s := e.measure(b, func() {
			j, _, err = e.svc.Submit(e.ctx(), e.tenants["contoso"], batch.Request{Alias: "summarize", MaxTokens: 64, InputBlob: "contoso/corpus.jsonl"})
		})
		b.StopTimer()
		if err != nil || j.Items != n || len(j.Parts) != 1 {
			b.Fatalf("Submit: %v (%d items, %d parts)", err, j.Items, len(j.Parts))
		}
		peakSubmit = max(peakSubmit, rss.MB(rss.Peak(b, rss.Self)))
		size = j.Parts[0].Bytes

		debug.FreeOSMemory()
		rss.Reset(b, rss.Self)
		b.StartTimer()
		var rep batch.TickReport
		a := e.measure(b, func() { rep, err = e.svc.Poll(e.ctx()) })
		b.StopTimer()
		if err != nil || rep.Admitted != 1 {
			b.Fatalf("admission tick: %+v %v", rep, err)
		}
		peakAdmit = max(peakAdmit, rss.MB(rss.Peak(b, rss.Self)))

		// The floor, over the same bytes between the same endpoints.
		stage(b, e, j.Parts[0].InputBlob, local)
		r := e.measure(b, func() {
			if got := plainRead(b, raw, e.cont.Uploads, "contoso/corpus.jsonl"); got != corpusBytes {
				b.Fatalf("read %d bytes of the corpus, want %d", got, corpusBytes)
			}
		})
		wr := e.measure(b, func() { plainWrite(b, raw, e.cont.Inputs, fmt.Sprintf("plain/%d.jsonl", i), local) })
		u := e.measure(b, func() { plainUpload(b, e.simURL, local) })

		if _, err := e.svc.Cancel(ctx, "contoso", j.ID); err != nil {
			b.Fatal(err)
		}
		var whole, floor work
		whole.add(s)
		whole.add(a)
		floor.add(r)
		floor.add(wr)
		floor.add(u)
		b.Logf("run %d, load %s: submit %s + admission %s = %s against the floor %s (read %s + write %s + upload %s)",
			i+1, load, s, a, whole.against(floor), floor, r, wr, u)
		submit.add(s)
		admit.add(a)
		read.add(r)
		write.add(wr)
		upload.add(u)
	}
	nf := float64(b.N)
	var whole, floor work
	whole.add(submit)
	whole.add(admit)
	floor.add(read)
	floor.add(write)
	floor.add(upload)
	b.ReportMetric(float64(corpusBytes)/1e6, "corpus-MB")
	b.ReportMetric(float64(size)/1e6, "part-MB")
	b.ReportMetric(submit.wall.Seconds()/nf, "submit-s")
	b.ReportMetric(admit.wall.Seconds()/nf, "admit-s")
	b.ReportMetric(floor.wall.Seconds()/nf, "floor-s")
	b.ReportMetric(whole.wall.Seconds()/floor.wall.Seconds(), "x-floor")
	b.ReportMetric(whole.cpu().Seconds()/floor.cpu().Seconds(), "cpu-x-floor")
	b.ReportMetric(float64(whole.requests)/nf, "requests")
	b.ReportMetric(float64(floor.requests)/nf, "floor-requests")
	b.ReportMetric(peakSubmit, "submit-peak-RSS-MB")
	b.ReportMetric(peakAdmit, "admit-peak-RSS-MB")
	b.Logf("%d lines, corpus %.1f MB, part %.1f MB, %d runs: submit %s + admission %s = %s against the floor %s (read %s + write %s + upload %s); peak RSS %.1f / %.1f MB",
		n, float64(corpusBytes)/1e6, float64(size)/1e6, b.N, submit, admit, whole.against(floor), floor, read, write, upload, peakSubmit, peakAdmit)
	if peakSubmit >= benchMaxPeakRSSMB || peakAdmit >= benchMaxPeakRSSMB {
		b.Errorf("peak RSS %.1f MB (submit) and %.1f MB (admission), want under %d MB", peakSubmit, peakAdmit, benchMaxPeakRSSMB)
	}
}

// stage copies the stored part to a local file, outside the timed phases.
func stage(tb testing.TB, e *env, blob, path string) {
	tb.Helper()
	body, _, err := e.blobs.Open(context.Background(), e.cont.Inputs, blob)
	if err != nil {
		tb.Fatal(err)
	}
	defer body.Close()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(f, body); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// plainRead downloads a blob into io.Discard and returns its size.
func plainRead(tb testing.TB, raw *azblob.Client, containerName, name string) int64 {
	tb.Helper()
	res, err := raw.DownloadStream(context.Background(), containerName, name, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	n, err := io.Copy(io.Discard, res.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// plainWrite uploads a local file to a blob with the SDK's defaults.
func plainWrite(tb testing.TB, raw *azblob.Client, containerName, name, path string) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := raw.UploadStream(context.Background(), containerName, name, f, nil); err != nil {
		tb.Fatal(err)
	}
}

// plainUpload POSTs a local file to the simulator's Files API as one
// multipart form, streamed.
func plainUpload(tb testing.TB, simURL, path string) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := mw.WriteField("purpose", "batch")
		if err == nil {
			var fw io.Writer
			if fw, err = mw.CreateFormFile("file", "plain.jsonl"); err == nil {
				if _, err = io.Copy(fw, f); err == nil {
					err = mw.Close()
				}
			}
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest(http.MethodPost, simURL+"/openai/v1/files", pr)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("api-key", aoaisim.DefaultKey)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusCreated {
		body, _ := io.ReadAll(res.Body)
		tb.Fatalf("plain upload: %s %s", res.Status, body)
	}
}
