package aoaisim_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/openai/openai-go/v3"
)

// countCodes counts result lines per error code ("" for successes).
func countCodes(t *testing.T, lines []resultLine) map[string]int {
	t.Helper()
	codes := map[string]int{}
	for _, l := range lines {
		switch {
		case l.Error != nil:
			codes[l.Error.Code]++
		case l.Response != nil && l.Response.StatusCode >= 400:
			var body struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			_ = json.Unmarshal(l.Response.Body, &body)
			codes[body.Error.Code]++
		default:
			codes[""]++
		}
	}
	return codes
}

func TestBatch_Expiry(t *testing.T) {
	t.Parallel()
	// 30 lines at one per hour: by expires_at (created + 24 h, in progress
	// from created + 2 min) 23 are done.
	tests := []struct {
		name       string
		cfg        aoaisim.BatchConfig
		advance    time.Duration
		status     openai.BatchStatus
		completed  int64
		failed     int64
		errorLines int
	}{
		{"expired with partial output", aoaisim.BatchConfig{LinesPerMinute: 1.0 / 60}, 25 * time.Hour, "expired", 23, 7, 7},
		{"expired lines omitted", aoaisim.BatchConfig{LinesPerMinute: 1.0 / 60, OmitExpiredLines: true}, 25 * time.Hour, "expired", 23, 0, 0},
		{"expiry switched off", aoaisim.BatchConfig{LinesPerMinute: 1.0 / 60, Expiry: aoaisim.ExpiryContinue}, 32 * time.Hour, "completed", 30, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, aoaisim.Config{Batch: tt.cfg})
			b, err := createBatch(context.Background(), s.classic, upload(t, s.classic, joinLines(chatLines(30, batchDep)), 0))
			if err != nil {
				t.Fatalf("Batches.New: %v", err)
			}
			s.clock.Advance(tt.advance)
			b = waitStatus(t, s.classic, b.ID, tt.status)
			if b.RequestCounts.Completed != tt.completed || b.RequestCounts.Failed != tt.failed || b.RequestCounts.Total != 30 {
				t.Errorf("counts = %+v, want completed %d failed %d", b.RequestCounts, tt.completed, tt.failed)
			}
			if tt.status == "expired" && b.ExpiredAt != b.ExpiresAt {
				t.Errorf("expired_at = %d, want expires_at %d", b.ExpiredAt, b.ExpiresAt)
			}
			out := readResults(t, s.classic, b.OutputFileID)
			errs := readResults(t, s.classic, b.ErrorFileID)
			if len(out) != int(tt.completed) || len(errs) != tt.errorLines {
				t.Errorf("files have %d output and %d error lines, want %d and %d", len(out), len(errs), tt.completed, tt.errorLines)
			}
			if got := countCodes(t, errs)["batch_expired"]; got != tt.errorLines {
				t.Errorf("batch_expired lines = %d, want %d", got, tt.errorLines)
			}
			if s.srv.Stats().Deployments[2].EnqueuedTokens != 0 {
				t.Error("enqueued tokens not released")
			}
		})
	}
}

func TestBatch_Cancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("in progress, partial output", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, aoaisim.Config{Batch: aoaisim.BatchConfig{LinesPerMinute: 1}})
		lines := chatLines(30, batchDep)
		b, err := createBatch(ctx, s.v1, upload(t, s.v1, joinLines(lines), 0))
		if err != nil {
			t.Fatalf("Batches.New: %v", err)
		}
		s.clock.Advance(12 * time.Minute)
		waitFor(t, s.v1, b.ID, "10 lines done", func(b *openai.Batch) bool { return b.RequestCounts.Completed == 10 })
		b, err = s.v1.Batches.Cancel(ctx, b.ID)
		if err != nil || b.Status != "cancelling" || b.CancellingAt != epoch().Unix()+12*60 {
			t.Fatalf("Cancel = %+v, %v", b, err)
		}
		s.clock.Advance(time.Minute)
		b = waitStatus(t, s.v1, b.ID, "cancelled")
		if b.CancelledAt != b.CancellingAt+60 || b.RequestCounts.Completed != 10 || b.RequestCounts.Total != 30 {
			t.Errorf("cancelled: at %d counts %+v", b.CancelledAt, b.RequestCounts)
		}
		out := readResults(t, s.v1, b.OutputFileID)
		if len(out) != 10 {
			t.Fatalf("partial output has %d lines, want 10", len(out))
		}
		checkOutput(t, lines[:10], out)
		if s.srv.Stats().Deployments[2].EnqueuedTokens != 0 {
			t.Error("enqueued tokens not released")
		}
	})
	t.Run("validating, no output", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, aoaisim.Config{})
		b, err := createBatch(ctx, s.classic, upload(t, s.classic, joinLines(chatLines(3, batchDep)), 0))
		if err != nil {
			t.Fatalf("Batches.New: %v", err)
		}
		if b, err = s.classic.Batches.Cancel(ctx, b.ID); err != nil || b.Status != "cancelling" {
			t.Fatalf("Cancel = %+v, %v", b, err)
		}
		s.clock.Advance(time.Minute)
		b = waitStatus(t, s.classic, b.ID, "cancelled")
		if b.OutputFileID != "" || b.InProgressAt != 0 {
			t.Errorf("cancelled in validation: output %q in_progress_at %d", b.OutputFileID, b.InProgressAt)
		}
	})
	t.Run("completed cannot be cancelled", func(t *testing.T) {
		t.Parallel()
		s := newSim(t, aoaisim.Config{})
		b, err := createBatch(ctx, s.classic, upload(t, s.classic, joinLines(chatLines(3, batchDep)), 0))
		if err != nil {
			t.Fatalf("Batches.New: %v", err)
		}
		s.clock.Advance(time.Hour)
		waitStatus(t, s.classic, b.ID, "completed")
		_, err = s.classic.Batches.Cancel(ctx, b.ID)
		if e := apiError(t, err); e.StatusCode != 409 {
			t.Errorf("cancel completed = %d, want 409", e.StatusCode)
		}
	})
}

func TestBatch_ContentFilter(t *testing.T) {
	t.Parallel()
	lines := append(chatLines(3, batchDep),
		chatLine("blocked-prompt", batchDep, "/v1/chat/completions", "x "+aoaisim.DefaultPromptTrigger),
		chatLine("blocked-completion", batchDep, "/v1/chat/completions", "x "+aoaisim.DefaultCompletionTrigger))
	tests := []struct {
		name  string
		style string
	}{
		{"response lines", aoaisim.ErrorLineResponse},
		{"error lines", aoaisim.ErrorLineError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, aoaisim.Config{Batch: aoaisim.BatchConfig{ErrorLine: tt.style}})
			b, err := createBatch(context.Background(), s.classic, upload(t, s.classic, joinLines(lines), 0))
			if err != nil {
				t.Fatalf("Batches.New: %v", err)
			}
			s.clock.Advance(time.Hour)
			b = waitStatus(t, s.classic, b.ID, "completed")
			if b.RequestCounts.Completed != 4 || b.RequestCounts.Failed != 1 {
				t.Errorf("counts = %+v, want 4 completed, 1 failed", b.RequestCounts)
			}
			errs := readResults(t, s.classic, b.ErrorFileID)
			if len(errs) != 1 || errs[0].CustomID != "blocked-prompt" {
				t.Fatalf("error file = %+v, want the blocked prompt", errs)
			}
			switch tt.style {
			case aoaisim.ErrorLineResponse:
				var body struct {
					Error struct {
						Code       string          `json:"code"`
						InnerError json.RawMessage `json:"innererror"`
					} `json:"error"`
				}
				if errs[0].Response == nil || errs[0].Response.StatusCode != 400 || json.Unmarshal(errs[0].Response.Body, &body) != nil ||
					body.Error.Code != "content_filter" || len(body.Error.InnerError) == 0 || errs[0].Error != nil {
					t.Errorf("error line = %+v", errs[0])
				}
			default:
				if errs[0].Response != nil || errs[0].Error == nil || errs[0].Error.Code != "content_filter" {
					t.Errorf("error line = %+v", errs[0])
				}
			}
			for _, l := range readResults(t, s.classic, b.OutputFileID) {
				if l.CustomID != "blocked-completion" {
					continue
				}
				var cc openai.ChatCompletion
				if err := json.Unmarshal(l.Response.Body, &cc); err != nil || cc.Choices[0].FinishReason != "content_filter" ||
					l.Response.StatusCode != 200 || cc.Usage.CompletionTokens == 0 {
					t.Errorf("completion-filtered line = status %d finish %q usage %+v (%v)", l.Response.StatusCode, cc.Choices[0].FinishReason, cc.Usage, err)
				}
				return
			}
			t.Error("completion-filtered line missing from the output file")
		})
	}
}

func TestBatch_OutputFileDelay(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{Faults: []aoaisim.FaultRule{{Deployment: batchDep, OutputFileDelay: aoaisim.Duration(2 * time.Hour)}}})
	b, err := createBatch(context.Background(), s.v1, upload(t, s.v1, joinLines(chatLines(3, batchDep)), 0))
	if err != nil {
		t.Fatalf("Batches.New: %v", err)
	}
	s.clock.Advance(time.Hour)
	b = waitStatus(t, s.v1, b.ID, "completed")
	if b.OutputFileID != "" || b.ErrorFileID != "" || b.JSON.OutputFileID.Raw() != "null" {
		t.Errorf("completed batch shows output %q / error %q before the delay", b.OutputFileID, b.ErrorFileID)
	}
	s.clock.Advance(2 * time.Hour)
	b = waitStatus(t, s.v1, b.ID, "completed")
	if b.OutputFileID == "" || b.ErrorFileID == "" {
		t.Errorf("output file IDs still missing after the delay")
	}
}
