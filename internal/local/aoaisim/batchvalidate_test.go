package aoaisim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/aoaisim"
)

func TestBatch_ValidationErrors(t *testing.T) {
	t.Parallel()
	good := func(id string) string { return chatLine(id, batchDep, "/v1/chat/completions", "hello") }
	tooMany := func() string {
		var b strings.Builder
		for i := range 100_001 {
			fmt.Fprintf(&b, `{"custom_id":"%d","method":"POST","url":"/v1/chat/completions","body":{"model":"%s"}}`+"\n", i, batchDep)
		}
		return b.String()
	}
	tests := []struct {
		name     string
		content  string
		urlMatch string
		code     string // "" means the batch must complete
		line     int64  // 0: no line
	}{
		{"invalid json", joinLines([]string{good("a"), `{"custom_id": "b", "method":`, good("c")}), "", "invalid_json_line", 2},
		{"blank line", joinLines([]string{good("a"), "", good("c")}), "", "invalid_json_line", 2},
		{"duplicate custom_id", joinLines([]string{good("a"), good("b"), good("a")}), "", "duplicate_custom_id", 3},
		{"model mismatch", joinLines([]string{good("a"), chatLine("b", "other-batch", "/v1/chat/completions", "x")}), "", "model_mismatch", 2},
		{"url does not match endpoint", joinLines([]string{chatLine("a", batchDep, "/v1/embeddings", "x")}), "", "url_mismatch", 1},
		{"urls differ, exact", joinLines([]string{good("a"), chatLine("b", batchDep, "/chat/completions", "x")}), aoaisim.URLMatchExact, "url_mismatch", 2},
		{"urls differ, normalised", joinLines([]string{good("a"), chatLine("b", batchDep, "/chat/completions", "x")}), "", "", 0},
		{"too many tasks", tooMany(), "", "too_many_tasks", 0},
		{"empty file", "", "", "empty_file", 0},
		{"byte order mark", "\xef\xbb\xbf" + joinLines([]string{good("a")}), "", "model_not_found", 0},
		{"unknown deployment", joinLines([]string{chatLine("a", "nope", "/v1/chat/completions", "x")}), "", "model_not_found", 1},
		{"standard deployment", joinLines([]string{chatLine("a", chatDep, "/v1/chat/completions", "x")}), "", "invalid_request", 1},
		{"missing custom_id", joinLines([]string{`{"method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini-batch"}}`}), "", "invalid_request", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			deps := append(testDeployments(), aoaisim.Deployment{Name: "other-batch", Model: "gpt-4o-mini", Type: aoaisim.TypeGlobalBatch})
			s := newSim(t, aoaisim.Config{Deployments: deps, Batch: aoaisim.BatchConfig{URLMatch: tt.urlMatch}})
			b, err := createBatch(context.Background(), s.classic, upload(t, s.classic, tt.content, 0))
			if err != nil {
				t.Fatalf("Batches.New: %v", err)
			}
			s.clock.Advance(2 * time.Minute)
			if tt.code == "" {
				s.clock.Advance(time.Hour)
				waitStatus(t, s.classic, b.ID, "completed")
				return
			}
			b = waitStatus(t, s.classic, b.ID, "failed")
			if len(b.Errors.Data) == 0 {
				t.Fatal("failed batch has no errors.data")
			}
			e := b.Errors.Data[0]
			if e.Code != tt.code || e.Line != tt.line || e.Message == "" {
				t.Errorf("errors.data[0] = %+v, want code %s line %d", e, tt.code, tt.line)
			}
			if b.FailedAt != b.CreatedAt+120 || b.OutputFileID != "" || b.InProgressAt != 0 {
				t.Errorf("failed batch = failed_at %d output %q in_progress_at %d", b.FailedAt, b.OutputFileID, b.InProgressAt)
			}
			if tt.name == "byte order mark" && !strings.Contains(e.Message, "A valid model deployment name couldn't be extracted from the input file") {
				t.Errorf("BOM message = %q", e.Message)
			}
		})
	}
}
