package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/apptest"
)

// TestBatches_ThroughTheDevHost drives the batch CLI against the whole app
// behind the dev host: submit from a JSONL file, list, wait to harvested
// while the batch-poll timer is fired, results to a file and stdout, cancel
// of a second job that wait then follows to its cancelled end.
func TestBatches_ThroughTheDevHost(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the handler")
	}
	speed := 600.0
	s := apptest.Start(t, apptest.Config{
		Sim:      aoaisim.Config{Speed: &speed, Batch: aoaisim.BatchConfig{LinesPerMinute: 600}},
		Settings: map[string]string{"OFFPATH_BATCH_POLL_SCHEDULE": apptest.NeverSchedule},
	})
	env := map[string]string{"OFFPATH_URL": s.URL, "OFFPATH_API_KEY": s.Keys["contoso"], "OFFPATH_FUNCTION_KEY": apptest.FunctionKey}
	dir := t.TempDir()
	input := filepath.Join(dir, "tickets.jsonl")
	var lines []string
	for i := range 5 {
		lines = append(lines, fmt.Sprintf(`{"id":"t-%d","prompt":"Ticket %d: the VPN drops every hour."}`, i, i))
	}
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	var submitted job
	out := mustRun(t, env, "batches", "submit", "-alias", "summarize", "-input", input, "-max-tokens", "24", "-metadata", "team=support", "-json")
	if err := json.Unmarshal([]byte(out), &submitted); err != nil || submitted.ID == "" || submitted.Items != 5 || submitted.Metadata["team"] != "support" {
		t.Fatalf("batches submit -json = %+v, %v\n%s", submitted, err, out)
	}
	id := submitted.ID

	var page struct{ Data []job }
	if out := mustRun(t, env, "batches", "list", "-json"); json.Unmarshal([]byte(out), &page) != nil || len(page.Data) != 1 || page.Data[0].ID != id {
		t.Errorf("batches list -json:\n%s", out)
	}
	if out := mustRun(t, env, "batches", "list", "-state", "harvested"); !strings.Contains(out, "no harvested batch jobs") {
		t.Errorf("batches list -state harvested before any: %s", out)
	}

	start := time.Now()
	out, code := waitFiring(t, s, env, "batches", "wait", id, "-interval", "20ms")
	t.Logf("batches wait to harvested took %v", time.Since(start).Round(time.Millisecond))
	if code != 0 || !strings.Contains(out, id+" accepted 0/5 items") || !strings.Contains(out, "harvested (completed): 5 ok") {
		t.Errorf("batches wait: exit %d\n%s", code, out)
	}
	var got job
	if out := mustRun(t, env, "batches", "get", id, "-json"); json.Unmarshal([]byte(out), &got) != nil || got.State != batch.Harvested || got.Outcomes.OK != 5 || got.Usage.PromptTokens == 0 {
		t.Errorf("batches get -json:\n%s", out)
	}
	if out := mustRun(t, env, "batches", "get", id); !strings.Contains(out, "harvested (completed)") || !strings.Contains(out, "5 ok") {
		t.Errorf("batches get:\n%s", out)
	}

	// Results: to stdout, and whole to a file.
	out = mustRun(t, env, "batches", "results", id)
	results := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range results {
		var r batch.ResultLine
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Outcome != batch.OK || !strings.HasPrefix(r.ItemID, "t-") {
			t.Errorf("result line %s: %v", l, err)
		}
	}
	if len(results) != 5 {
		t.Errorf("%d result lines, want 5", len(results))
	}
	file := filepath.Join(dir, "out", "results.jsonl")
	if err := os.Mkdir(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	var summary struct {
		Lines    int  `json:"lines"`
		Complete bool `json:"complete"`
	}
	if out := mustRun(t, env, "batches", "results", id, "-o", file, "-json"); json.Unmarshal([]byte(out), &summary) != nil || summary.Lines != 5 || !summary.Complete {
		t.Errorf("batches results -o -json:\n%s", out)
	}
	if b, err := os.ReadFile(file); err != nil || strings.TrimSpace(string(b)) != strings.TrimSpace(out) && len(strings.Split(strings.TrimSpace(string(b)), "\n")) != 5 {
		t.Errorf("results file: %v\n%s", err, b)
	}

	// A second job, from a blob, cancelled before its first poll: wait
	// follows it to its cancelled end and exits 1.
	corpus, err := os.ReadFile(input)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = s.Blobs.CreateContainer(context.Background(), batch.DefaultUploadsContainer, nil)
	if _, err := s.Blobs.UploadBuffer(context.Background(), batch.DefaultUploadsContainer, "contoso/tickets.jsonl", corpus, nil); err != nil {
		t.Fatalf("upload the corpus: %v", err)
	}
	out = mustRun(t, env, "batches", "submit", "-alias", "summarize", "-input-blob", "contoso/tickets.jsonl", "-idempotency-key", "second")
	second := strings.TrimSuffix(strings.Fields(out)[1], ":")
	if out := mustRun(t, env, "batches", "cancel", second); !strings.Contains(out, "cancel requested") {
		t.Errorf("batches cancel: %s", out)
	}
	out, code = waitFiring(t, s, env, "batches", "wait", second, "-interval", "20ms", "-json")
	var cancelled job
	if code != 1 || json.Unmarshal([]byte(out), &cancelled) != nil || cancelled.Final != batch.Cancelled {
		t.Errorf("batches wait on a cancelled job: exit %d\n%s", code, out)
	}

	// Failures: the API's error, exit 1; bad input, exit 2.
	for _, c := range []struct {
		env    map[string]string
		args   []string
		code   int
		stderr string
	}{
		{env, []string{"batches", "cancel", id}, 1, "409 job_finished"},
		{env, []string{"batches", "get", "nope"}, 1, "404 not_found"},
		{map[string]string{"OFFPATH_URL": s.URL, "OFFPATH_API_KEY": s.Keys["fabrikam"], "OFFPATH_FUNCTION_KEY": apptest.FunctionKey}, []string{"batches", "get", id}, 1, "404 not_found"},
		{map[string]string{"OFFPATH_URL": s.URL, "OFFPATH_API_KEY": s.Keys["contoso"]}, []string{"batches", "list"}, 1, "401"},
		{env, []string{"batches", "submit", "-alias", "gpt-9", "-input", input}, 1, "alias"},
		{env, []string{"batches", "submit", "-alias", "summarize", "-input-blob", "contoso/nothing.jsonl"}, 1, "400 input_blob_not_found"},
		{env, []string{"batches", "submit", "-input", input}, 2, "missing -alias"},
		{env, []string{"batches", "submit", "-alias", "summarize"}, 2, "missing -input FILE or -input-blob NAME"},
		{env, []string{"batches", "list", "-state", "done"}, 2, `-state "done": want one of accepted`},
		{env, []string{"batches", "list", "-limit", "1000"}, 2, "-limit 1000"},
		{env, []string{"batches", "wait"}, 2, "want exactly one job id"},
		{map[string]string{"OFFPATH_URL": s.URL}, []string{"batches", "list"}, 2, "missing -key (or OFFPATH_API_KEY)"},
		{env, []string{"batches", "list", "-url", "ftp://x"}, 2, "-url"},
	} {
		stdout, stderr, code := invoke(t, c.env, c.args...)
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("offpath %q: exit %d (want %d)\nstdout: %s\nstderr: %s", c.args, code, c.code, stdout, stderr)
		}
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(lines[0]+"\nnot json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := invoke(t, env, "batches", "submit", "-alias", "summarize", "-input", bad); code != 1 || !strings.Contains(stderr, "line 2: not a JSON object") {
		t.Errorf("submit bad JSONL: exit %d, %s", code, stderr)
	}
}

// waitFiring runs the CLI (a wait) while firing the batch-poll timer, as its
// schedule would, until the command returns; it returns stdout and the exit
// status.
func waitFiring(t *testing.T, s *apptest.Stack, env map[string]string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	done := make(chan int)
	go func() {
		err := run(ctx, args, func(k string) string { return env[k] }, &out, &errOut)
		done <- exitCode(err, &errOut)
	}()
	tick := time.NewTicker(150 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case code := <-done:
			if errOut.Len() > 0 {
				t.Logf("stderr of offpath %q:\n%s", args, errOut.String())
			}
			return out.String(), code
		case <-tick.C:
			s.Fire("batch-poll")
		}
	}
}

func TestProgressBar(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		done, total int64
		want        string
	}{{0, 10, "[..........]"}, {5, 10, "[#####.....]"}, {10, 10, "[##########]"}, {12, 10, "[##########]"}, {0, 0, "[..........]"}} {
		if got := bar(c.done, c.total, 10); got != c.want {
			t.Errorf("bar(%d, %d) = %q, want %q", c.done, c.total, got, c.want)
		}
	}
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	deadline := now.Add(90 * time.Minute)
	j := &job{ID: "b1", State: batch.Submitted, Items: 4, ExpectedBy: &deadline, RequestCounts: requestCounts{Total: 4, Completed: 1, Failed: 1}}
	j.Parts = append(j.Parts, jobPart{Index: 0, AzureStatus: "in_progress"})
	if got, want := progressLine(j, now), "b1 submitted 2/4 items (50%), part 0 in_progress, deadline in 1h30m0s"; got != want {
		t.Errorf("progressLine = %q, want %q", got, want)
	}
	// On a terminal the bar is redrawn in place; otherwise a line per change.
	var tty, plain bytes.Buffer
	pt := progress{w: &tty, tty: true, now: func() time.Time { return now }}
	pp := progress{w: &plain, now: func() time.Time { return now }}
	for range 2 {
		pt.show(j)
		pp.show(j)
	}
	pt.end()
	if got := tty.String(); strings.Count(got, "\r\033[K[###############...............] b1 submitted") != 2 || !strings.HasSuffix(got, "\n") {
		t.Errorf("terminal progress = %q", got)
	}
	if got := plain.String(); strings.Count(got, "\n") != 1 || strings.Contains(got, "\r") {
		t.Errorf("plain progress = %q", got)
	}
}

// TestWait_AsksAgainAfterAFailure: a 503 (a dependency blinked) is asked
// again; a 4xx ends the wait; -timeout bounds it. The API here is a stand-in
// answering in turn what the real one answers (the real one is above).
func TestWait_AsksAgainAfterAFailure(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("Authorization") != "Bearer opk_test":
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"code":"unauthenticated","message":"no credential"}}`)
		case r.URL.Path == "/api/v1/batches/stuck":
			fmt.Fprint(w, `{"id":"stuck","state":"submitted","items":3}`)
		case calls.Add(1) == 1:
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"code":"unavailable","message":"a dependency is unavailable; try again shortly"}}`)
		default:
			fmt.Fprint(w, `{"id":"j1","state":"harvested","final":"completed","items":3,"outcomes":{"ok":3}}`)
		}
	}))
	defer srv.Close()
	env := map[string]string{"OFFPATH_URL": srv.URL, "OFFPATH_API_KEY": "opk_test"}
	stdout, stderr, code := invoke(t, env, "batches", "wait", "j1", "-interval", "1ms")
	if code != 0 || !strings.Contains(stderr, "503 unavailable") || !strings.Contains(stderr, "asking again") || !strings.Contains(stdout, "harvested (completed): 3 ok") {
		t.Errorf("wait through a 503: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if _, stderr, code := invoke(t, map[string]string{"OFFPATH_URL": srv.URL, "OFFPATH_API_KEY": "opk_other"}, "batches", "wait", "j1"); code != 1 || !strings.Contains(stderr, "401 unauthenticated") {
		t.Errorf("wait unauthorised: exit %d, %s", code, stderr)
	}
	if _, stderr, code := invoke(t, env, "batches", "wait", "stuck", "-interval", "5ms", "-timeout", "50ms"); code != 1 || !strings.Contains(stderr, "deadline exceeded") {
		t.Errorf("wait -timeout: exit %d, %s", code, stderr)
	}
}
