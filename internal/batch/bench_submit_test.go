package batch_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
)

// BenchmarkSubmitAdmit100k takes a 100,000-line corpus of ~150 MB that a
// tenant placed in its uploads area through the batch path's two halves:
// Submit (read the corpus, check every item, write the part and its index
// to platform storage) and the admission tick (stream the part from
// platform storage to the simulator's Files API, create the batch). In the
// same iteration it PUTs the same stored part with plain net/http to a
// loopback sink that writes it to disk. It reports both halves' times and
// peak RSS (simulator included; its clock is frozen so the batch does not
// run), and the admission's time over the plain PUT's.
//
//	go test -run '^$' -bench SubmitAdmit100k -benchtime 1x ./internal/batch/
func BenchmarkSubmitAdmit100k(b *testing.B) {
	const n = 100_000
	e := newEnv(b, envConfig{sim: simConfig(0)})
	ctx := context.Background()
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
	dir := b.TempDir()
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.CreateTemp(dir, "sink-*")
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer os.Remove(f.Name())
		defer f.Close()
		if _, err := io.Copy(f, r.Body); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	b.Cleanup(sink.Close)

	var submit, admit, plain time.Duration
	var peakSubmit, peakAdmit float64
	var size int64
	b.StopTimer()
	for range b.N {
		debug.FreeOSMemory()
		resetPeakRSS(b)
		b.StartTimer()
		start := time.Now()
		j, _, err := e.svc.Submit(e.ctx(), e.tenants["contoso"], batch.Request{Alias: "summarize", MaxTokens: 64, InputBlob: "contoso/corpus.jsonl"})
		submit += time.Since(start)
		b.StopTimer()
		if err != nil || j.Items != n || len(j.Parts) != 1 {
			b.Fatalf("Submit: %v (%d items, %d parts)", err, j.Items, len(j.Parts))
		}
		peakSubmit = max(peakSubmit, peakRSSMB(b))
		size = j.Parts[0].Bytes

		body, _, err := e.blobs.Open(ctx, e.cont.Inputs, j.Parts[0].InputBlob)
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, sink.URL, body)
		req.ContentLength = size
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != http.StatusCreated {
			b.Fatalf("plain PUT: %v %v", err, res)
		}
		res.Body.Close()
		body.Close()
		plain += time.Since(start)

		debug.FreeOSMemory()
		resetPeakRSS(b)
		b.StartTimer()
		start = time.Now()
		rep, err := e.svc.Poll(e.ctx())
		admit += time.Since(start)
		b.StopTimer()
		if err != nil || rep.Admitted != 1 {
			b.Fatalf("admission tick: %+v %v", rep, err)
		}
		peakAdmit = max(peakAdmit, peakRSSMB(b))
		if _, err := e.svc.Cancel(ctx, "contoso", j.ID); err != nil {
			b.Fatal(err)
		}
	}
	nf := float64(b.N)
	b.ReportMetric(float64(size)/1e6, "part-MB")
	b.ReportMetric(submit.Seconds()/nf, "submit-s")
	b.ReportMetric(admit.Seconds()/nf, "admit-s")
	b.ReportMetric(plain.Seconds()/nf, "plain-put-s")
	b.ReportMetric(admit.Seconds()/plain.Seconds(), "admit/plain")
	b.ReportMetric(peakSubmit, "submit-peak-RSS-MB")
	b.ReportMetric(peakAdmit, "admit-peak-RSS-MB")
	b.Logf("submit %.2f s, admission %.2f s, plain PUT %.2f s of %.0f MB; peak RSS %.1f / %.1f MB",
		submit.Seconds()/nf, admit.Seconds()/nf, plain.Seconds()/nf, float64(size)/1e6, peakSubmit, peakAdmit)
	if peakSubmit >= benchMaxPeakRSSMB || peakAdmit >= benchMaxPeakRSSMB {
		b.Errorf("peak RSS %.1f MB (submit) and %.1f MB (admission), want under %d MB", peakSubmit, peakAdmit, benchMaxPeakRSSMB)
	}
}
