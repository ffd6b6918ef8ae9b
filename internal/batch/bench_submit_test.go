package batch_test

import (
	"context"
	"encoding/json"
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
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/cputime"
	"github.com/offpath/offpath/internal/testing/rss"
)

// BenchmarkSubmit takes a corpus of 10,000 and of 100,000 lines (about 1.5
// KB each) that a tenant placed in its uploads area from the request to
// Azure: Submit (read the corpus, check every item, rewrite it as Global
// Batch lines with the deployment and the custom_id, write the part and its
// index to platform storage, hashing as it writes) and then the admission
// tick (stream the stored part to the simulator's Files API, create the
// batch). Its floor, in the same iteration, is the same bytes between the
// same endpoints by the plainest means: read the corpus once (a download of
// the blob into io.Discard), write the part durably once (an azblob upload
// of the part's bytes to the same inputs container, from a local copy, in
// blocks as large as the stored part's, as many at once as Submit stages)
// and upload it once from where it was stored (that blob downloaded and
// streamed into one multipart POST to the simulator's Files API: the
// admission runs in a later invocation, which has the part only in
// storage). It reports each half beside its own floor (submission: read and
// write; admission: the upload), the whole over the floor, and the whole
// against a floor that uploads from the local copy instead (never reading
// the part back); and the peak RSS of each half (simulator included; its
// clock is frozen so the batch does not run); and, as BenchmarkHarvest
// does, the CPU time and requests of each phase, each run's figures logged
// with the load average.
//
// Outside the timed phases: a first job, as any earlier job of the
// process, creates the containers and tables, and its part is the local
// copy; each job is cancelled and its batch ended and harvested before the
// next, so that every admission tick admits one job and polls no other;
// each iteration deletes what it stored (Azurite keeps every blob in its
// memory), so that every iteration finds the same Azurite; ours and the
// floor take turns going first.
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
	req := batch.Request{Alias: "summarize", MaxTokens: 64, InputBlob: "contoso/corpus.jsonl"}

	// One untimed job first, as any earlier job of the process: it creates
	// the containers and tables, and its part, kept as a local file, is
	// what the floor writes and uploads.
	b.StopTimer()
	j, _, err := e.svc.Submit(e.ctx(), e.tenants["contoso"], req)
	if err != nil {
		b.Fatal(err)
	}
	local := filepath.Join(b.TempDir(), "part.jsonl")
	size := stage(b, e, j.Parts[0].InputBlob, local)
	blockSize := committedBlocks(b, raw, e.cont.Inputs, j.Parts[0].InputBlob)[0] // the part's block size
	settle(b, e, j.ID)

	var submit, admit, read, write, upload, uploadLocal work
	var peakSubmit, peakAdmit float64
	for i := range b.N {
		load := cputime.LoadAverage()
		// Ours and the floor take turns going first, so that neither
		// always follows the other's writes into Azurite.
		var r, wr, u, ul work
		runFloor := func() {
			plain := fmt.Sprintf("plain/%d.jsonl", i)
			r = e.measure(b, func() {
				if got := plainRead(b, raw, e.cont.Uploads, "contoso/corpus.jsonl"); got != corpusBytes {
					b.Fatalf("read %d bytes of the corpus, want %d", got, corpusBytes)
				}
			})
			wr = e.measure(b, func() { plainWrite(b, raw, e.cont.Inputs, plain, local, blockSize) })
			var ids [2]string
			u = e.measure(b, func() { ids[0] = plainUpload(b, e.simURL, storedPart(b, raw, e.cont.Inputs, plain)) })
			ul = e.measure(b, func() { ids[1] = plainUpload(b, e.simURL, localPart(b, local)) })
			// Nothing of the floor is left to weigh on the next phases.
			if err := e.blobs.Delete(ctx, e.cont.Inputs, plain); err != nil {
				b.Fatal(err)
			}
			for _, id := range ids {
				if err := e.opts.Azure.DeleteFile(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
		}
		if i%2 == 1 {
			runFloor()
		}

		debug.FreeOSMemory()
		rss.Reset(b, rss.Self)
		b.StartTimer()
		s := e.measure(b, func() { j, _, err = e.svc.Submit(e.ctx(), e.tenants["contoso"], req) })
		b.StopTimer()
		if err != nil || j.Items != n || len(j.Parts) != 1 || j.Parts[0].Bytes != size {
			b.Fatalf("Submit: %v (%d items, %d parts)", err, j.Items, len(j.Parts))
		}
		peakSubmit = max(peakSubmit, rss.MB(rss.Peak(b, rss.Self)))

		debug.FreeOSMemory()
		rss.Reset(b, rss.Self)
		b.StartTimer()
		var rep batch.TickReport
		a := e.measure(b, func() { rep, err = e.svc.Poll(e.ctx()) })
		b.StopTimer()
		if err != nil || rep.Jobs != 1 || rep.Admitted != 1 {
			b.Fatalf("admission tick: %+v %v", rep, err)
		}
		peakAdmit = max(peakAdmit, rss.MB(rss.Peak(b, rss.Self)))

		if i%2 == 0 {
			runFloor()
		}
		settle(b, e, j.ID)
		b.Logf("run %d, load %s: %s", i+1, load, submitReport(s, a, r, wr, u, ul))
		submit.add(s)
		admit.add(a)
		read.add(r)
		write.add(wr)
		upload.add(u)
		uploadLocal.add(ul)
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
	b.ReportMetric(submit.wall.Seconds()/(read.wall+write.wall).Seconds(), "submit-x-read-write")
	b.ReportMetric(whole.wall.Seconds()/floor.wall.Seconds(), "x-floor")
	b.ReportMetric(whole.cpu().Seconds()/floor.cpu().Seconds(), "cpu-x-floor")
	b.ReportMetric(float64(whole.requests)/nf, "requests")
	b.ReportMetric(float64(floor.requests)/nf, "floor-requests")
	b.ReportMetric(peakSubmit, "submit-peak-RSS-MB")
	b.ReportMetric(peakAdmit, "admit-peak-RSS-MB")
	b.Logf("%d lines, corpus %.1f MB, part %.1f MB in blocks of %d KiB, %d runs: %s; peak RSS %.1f / %.1f MB",
		n, float64(corpusBytes)/1e6, float64(size)/1e6, blockSize>>10, b.N, submitReport(submit, admit, read, write, upload, uploadLocal), peakSubmit, peakAdmit)
	if peakSubmit >= benchMaxPeakRSSMB || peakAdmit >= benchMaxPeakRSSMB {
		b.Errorf("peak RSS %.1f MB (submit) and %.1f MB (admission), want under %d MB", peakSubmit, peakAdmit, benchMaxPeakRSSMB)
	}
}

// stage copies the stored part to a local file and returns its size.
func stage(tb testing.TB, e *env, blob, path string) int64 {
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
	n, err := io.Copy(f, body)
	if err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return n
}

// settle ends a benchmark's job outside the timed phases: it is
// cancelled, the simulator's clock moved on so that its batch ends, and
// one tick harvests it, so that the next admission tick has only its own
// job to admit; and its input is deleted, so that Azurite, which keeps
// every blob in its memory, holds as much at every iteration.
func settle(tb testing.TB, e *env, id string) {
	tb.Helper()
	ctx := context.Background()
	if _, err := e.svc.Cancel(ctx, "contoso", id); err != nil {
		tb.Fatal(err)
	}
	e.sim.Clock().Advance(time.Hour)
	if _, err := e.svc.Poll(e.ctx()); err != nil {
		tb.Fatal(err)
	}
	if j, err := e.jobs.Get(ctx, "contoso", id); err != nil || j.Active() {
		tb.Fatalf("job %s still active after its cancellation was harvested (%v)", id, err)
	}
	if err := e.blobs.DeletePrefix(ctx, e.cont.Inputs, "contoso/"+id+"/"); err != nil {
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

// plainWrite uploads a local file to a blob in blocks of blockSize, as
// many at once as a blobstore writer stages.
func plainWrite(tb testing.TB, raw *azblob.Client, containerName, name, path string, blockSize int64) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := raw.UploadStream(context.Background(), containerName, name, f,
		&azblob.UploadStreamOptions{BlockSize: blockSize, Concurrency: blobstore.DefaultConcurrency}); err != nil {
		tb.Fatal(err)
	}
}

// submitReport sets each half beside its floor, and the whole beside the
// floor with the part uploaded from storage and from a local copy.
func submitReport(submit, admit, read, write, upload, uploadLocal work) string {
	var pass, whole, floor, floorLocal work
	pass.add(read)
	pass.add(write)
	whole.add(submit)
	whole.add(admit)
	floor.add(pass)
	floor.add(upload)
	floorLocal.add(pass)
	floorLocal.add(uploadLocal)
	return fmt.Sprintf("submission %s against read %s + write %s; admission %s against the upload from storage %s; "+
		"the whole %s against the floor %s; against the floor with the upload from a local copy (%s) %.2f× (CPU %.2f×)",
		submit.against(pass), read, write, admit.against(upload), upload, whole.against(floor), floor, uploadLocal,
		whole.wall.Seconds()/floorLocal.wall.Seconds(), whole.cpu().Seconds()/floorLocal.cpu().Seconds())
}

// storedPart streams the stored part from platform storage.
func storedPart(tb testing.TB, raw *azblob.Client, containerName, name string) io.ReadCloser {
	tb.Helper()
	res, err := raw.DownloadStream(context.Background(), containerName, name, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return res.Body
}

// localPart opens the local copy of the part.
func localPart(tb testing.TB, path string) io.ReadCloser {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// plainUpload POSTs f to the simulator's Files API as one multipart form,
// streamed, closes f and returns the file's id.
func plainUpload(tb testing.TB, simURL string, f io.ReadCloser) string {
	tb.Helper()
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
	var file struct {
		ID string `json:"id"`
	}
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusCreated || json.NewDecoder(res.Body).Decode(&file) != nil {
		tb.Fatalf("plain upload: %s", res.Status)
	}
	return file.ID
}
