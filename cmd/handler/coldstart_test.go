package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkColdstart measures what the Functions host waits for at every
// start and scale-out: from exec of the handler binary to its first answer
// to GET / (polled every 200 µs, as tightly as a host could). It reports the
// median and the maximum in milliseconds.
func BenchmarkColdstart(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "handler")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		b.Fatalf("build handler: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "host.json"), []byte(`{"version":"2.0","functionTimeout":"00:10:00"}`), 0o644); err != nil {
		b.Fatal(err)
	}
	copyModels(b, dir)
	client := &http.Client{Timeout: time.Second}
	var samples []time.Duration
	for b.Loop() {
		port := freePortAny(b)
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "FUNCTIONS_CUSTOMHANDLER_PORT="+strconv.Itoa(port), "FUNCTIONS_APP_ROOT_PATH="+dir, "OFFPATH_LOG_LEVEL=warn",
			"AzureWebJobsStorage=UseDevelopmentStorage=true")
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
		for {
			res, err := client.Get(url)
			if err == nil {
				res.Body.Close()
				break
			}
			if time.Since(start) > 10*time.Second {
				b.Fatalf("no answer after 10 s: %v", err)
			}
			// The pause is the measurement's resolution: the handler
			// announces nothing before it listens, and poll's backoff
			// (up to 100 ms) would be larger than the figure itself.
			time.Sleep(200 * time.Microsecond)
		}
		samples = append(samples, time.Since(start))
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(samples[len(samples)-1].Microseconds())/1000, "max-ms")
}
