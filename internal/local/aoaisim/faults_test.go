package aoaisim_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/testing/poll"
	"github.com/openai/openai-go/v3"
)

// parallel runs fn n times on workers goroutines.
func parallel(n, workers int, fn func()) {
	jobs := make(chan struct{}, n)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range jobs {
				fn()
			}
		})
	}
	wg.Wait()
}

// withinRate fails unless observed/n is within 5 standard deviations of p.
func withinRate(t *testing.T, what string, observed, n int, p float64) {
	t.Helper()
	sigma := math.Sqrt(p * (1 - p) / float64(n))
	got := float64(observed) / float64(n)
	if math.Abs(got-p) > 5*sigma {
		t.Errorf("%s: observed rate %.3f (%d/%d), want %.3f ± %.3f", what, got, observed, n, p, 5*sigma)
	}
}

func TestFaults_ErrorRate(t *testing.T) {
	t.Parallel()
	const n, p = 1000, 0.2
	s := newSim(t, aoaisim.Config{Seed: 7, Faults: []aoaisim.FaultRule{{Deployment: chatDep, Route: "chat", ErrorRate: p}}})
	ctx := context.Background()
	var mu sync.Mutex
	statuses := map[int]int{}
	parallel(n, 8, func() {
		_, err := s.v1.Chat.Completions.New(ctx, chatParams(chatDep, "hi"))
		if err == nil {
			return
		}
		e := apiError(t, err)
		want := map[int]string{500: "InternalServerError", 503: "ServiceUnavailable"}[e.StatusCode]
		if want == "" || e.Code != want {
			t.Errorf("fault reply = %d %q", e.StatusCode, e.Code)
		}
		mu.Lock()
		statuses[e.StatusCode]++
		mu.Unlock()
	})
	errs := statuses[500] + statuses[503]
	withinRate(t, "5xx", errs, n, p)
	withinRate(t, "503 share of 5xx", statuses[503], errs, 0.5)
	st := s.srv.Stats()
	if st.FaultErrors != int64(errs) || st.Deployments[0].FaultErrors != int64(errs) {
		t.Errorf("stats fault_errors = %d / %d, want %d", st.FaultErrors, st.Deployments[0].FaultErrors, errs)
	}
	// Embeddings and other deployments are not covered by the rule.
	for range 50 {
		if _, err := s.v1.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: embedDep,
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}}); err != nil {
			t.Fatalf("embeddings hit by a chat rule: %v", err)
		}
	}
}

func TestFaults_ResetHangLatency(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		rule  aoaisim.FaultRule
		n     int
		check func(t *testing.T, s *sim, failures int, elapsed time.Duration)
	}{
		{"reset", aoaisim.FaultRule{Route: aoaisim.RouteChat, ResetRate: 0.25}, 400,
			func(t *testing.T, s *sim, failures int, _ time.Duration) {
				withinRate(t, "resets", failures, 400, 0.25)
				if got := s.srv.Stats().FaultResets; got != int64(failures) {
					t.Errorf("stats fault_resets = %d, want %d", got, failures)
				}
			}},
		{"hang", aoaisim.FaultRule{Deployment: chatDep, HangRate: 1}, 3,
			func(t *testing.T, s *sim, failures int, _ time.Duration) {
				if failures != 3 || s.srv.Stats().FaultHangs != 3 {
					t.Errorf("hangs = %d (stats %d), want 3", failures, s.srv.Stats().FaultHangs)
				}
			}},
		{"latency", aoaisim.FaultRule{Route: "chat", Latency: aoaisim.Duration(20 * time.Millisecond)}, 5,
			func(t *testing.T, _ *sim, failures int, elapsed time.Duration) {
				if failures != 0 || elapsed < 5*20*time.Millisecond {
					t.Errorf("failures %d, elapsed %v; want 0 and >= 100ms", failures, elapsed)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, aoaisim.Config{Seed: 3})
			if err := s.srv.SetFaults([]aoaisim.FaultRule{tt.rule}); err != nil {
				t.Fatalf("SetFaults: %v", err)
			}
			var mu sync.Mutex
			failures := 0
			start := time.Now()
			workers := 4
			if tt.name != "reset" {
				// latency: the elapsed time must add up; hang: each call
				// is given up once the server has counted it.
				workers = 1
			}
			parallel(tt.n, workers, func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				if tt.name == "hang" {
					// The client gives up once the server holds the call,
					// never before it has taken it in.
					ctx, cancel = context.WithCancel(context.Background())
					defer cancel()
					held := s.srv.Stats().FaultHangs + 1
					go func() {
						poll.Within(10*time.Second, func() bool { return s.srv.Stats().FaultHangs >= held })
						cancel()
					}()
				}
				_, err := s.classic.Chat.Completions.New(ctx, chatParams(chatDep, "hi"))
				if err == nil {
					return
				}
				var apiErr *openai.Error
				if errors.As(err, &apiErr) {
					t.Errorf("got an HTTP reply %d, want a transport failure", apiErr.StatusCode)
				}
				if tt.name == "hang" && !errors.Is(err, context.Canceled) {
					t.Errorf("hang error = %v, want the client's cancellation", err)
				}
				mu.Lock()
				failures++
				mu.Unlock()
			})
			tt.check(t, s, failures, time.Since(start))
		})
	}
}

func TestFaults_AdminEndpoint(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{})
	ctx := context.Background()
	body := map[string]any{"rules": []map[string]any{{"deployment": chatDep, "route": "chat_completions", "error_rate": 1, "error_status": 503}}}
	var got struct {
		Rules []aoaisim.FaultRule `json:"rules"`
	}
	if err := s.admin.Post(ctx, "_sim/faults", body, &got); err != nil {
		t.Fatalf("POST /_sim/faults: %v", err)
	}
	if len(got.Rules) != 1 || got.Rules[0].ErrorStatus != 503 {
		t.Fatalf("rules = %+v", got.Rules)
	}
	_, err := s.classic.Chat.Completions.New(ctx, chatParams(chatDep, "hi"))
	if e := apiError(t, err); e.StatusCode != 503 {
		t.Errorf("status = %d, want 503", e.StatusCode)
	}
	if err := s.admin.Delete(ctx, "_sim/faults", nil, &got); err != nil {
		t.Fatalf("DELETE /_sim/faults: %v", err)
	}
	if _, err := s.classic.Chat.Completions.New(ctx, chatParams(chatDep, "hi")); err != nil {
		t.Errorf("after clearing faults: %v", err)
	}
	bad := map[string]any{"rules": []map[string]any{{"error_rate": 2}}}
	err = s.admin.Post(ctx, "_sim/faults", bad, &got)
	if e := apiError(t, err); e.StatusCode != 400 {
		t.Errorf("invalid rule status = %d, want 400", e.StatusCode)
	}
}

// TestFaults_AfterCommit: a rule with AfterCommit loses the reply of an
// upload or a create that Azure carried out (reset, hang until the client
// gives up, 500, or a delay past the client's timeout), and Times makes it
// act once: the file or the batch exists although the caller was told
// nothing, and the next request is answered.
func TestFaults_AfterCommit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rule aoaisim.FaultRule
	}{
		{"reset", aoaisim.FaultRule{ResetRate: 1}},
		{"hang", aoaisim.FaultRule{HangRate: 1}},
		{"error", aoaisim.FaultRule{ErrorRate: 1, ErrorStatus: 503}},
		{"delay", aoaisim.FaultRule{Latency: aoaisim.Duration(time.Hour)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, aoaisim.Config{Seed: 5})
			call := func(fn func(ctx context.Context) error) error {
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				return fn(ctx)
			}
			content := joinLines(chatLines(3, batchDep))
			upRule, createRule := tt.rule, tt.rule
			upRule.Route, upRule.AfterCommit, upRule.Times = aoaisim.RouteFilesCreate, true, 1
			createRule.Route, createRule.AfterCommit, createRule.Times = aoaisim.RouteBatchesCreate, true, 1
			if err := s.srv.SetFaults([]aoaisim.FaultRule{upRule, createRule}); err != nil {
				t.Fatalf("SetFaults: %v", err)
			}
			err := call(func(ctx context.Context) error {
				_, err := s.v1.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(content), "input.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
				return err
			})
			if err == nil {
				t.Fatal("upload answered, want its reply lost")
			}
			st := s.srv.State()
			if len(st.Files) != 1 {
				t.Fatalf("%d files after the lost upload reply, want 1 (it was stored)", len(st.Files))
			}
			fileID := upload(t, s.v1, content, 0) // the rule is spent
			if len(s.srv.State().Files) != 2 {
				t.Fatalf("the second upload did not store a second file")
			}
			err = call(func(ctx context.Context) error { _, err := createBatch(ctx, s.v1, fileID); return err })
			if err == nil {
				t.Fatal("create answered, want its reply lost")
			}
			if st := s.srv.State(); len(st.Batches) != 1 || st.Batches[0].InputFileID != fileID {
				t.Fatalf("batches after the lost create reply: %+v, want the one on %s", st.Batches, fileID)
			}
			if _, err := createBatch(context.Background(), s.v1, fileID); err != nil {
				t.Fatalf("create after the rule is spent: %v", err)
			}
			if n := len(s.srv.State().Batches); n != 2 {
				t.Errorf("%d batches, want 2", n)
			}
		})
	}
}
