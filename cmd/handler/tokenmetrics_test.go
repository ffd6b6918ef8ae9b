package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The handler serves Prometheus' /metrics where OFFPATH_METRICS_ADDR says,
// and creates the token metrics file OFFPATH_TOKEN_METRICS_FILE names.
func TestRun_ServesPrometheusMetrics(t *testing.T) {
	t.Parallel()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	file := filepath.Join(t.TempDir(), "run", "metrics.jsonl")
	h := startHandler(t, map[string]string{"OFFPATH_METRICS_ADDR": addr, "OFFPATH_TOKEN_METRICS_FILE": file})
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, family := range []string{"# TYPE offpath_tokens_total counter", "# TYPE offpath_documents_total counter", "# TYPE offpath_batch_jobs gauge"} {
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), family) {
			t.Errorf("GET /metrics = %d, want %q:\n%s", res.StatusCode, family, body)
		}
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("token metrics file: %v", err)
	}
	h.cancel()
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("/metrics still served after shutdown")
	}
}
