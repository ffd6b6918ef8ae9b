package aoaisim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// checkOutput verifies that the output lines answer exactly the input lines
// (by custom_id), in another order, with usage as the approximation
// predicts. It returns the summed usage.
func checkOutput(t *testing.T, lines []string, out []resultLine) (prompt, completion int64) {
	t.Helper()
	want := make(map[string]string, len(lines))
	var inOrder []string
	for _, l := range lines {
		var in struct {
			CustomID string `json:"custom_id"`
			Body     struct {
				Messages []struct {
					Content string `json:"content"`
				} `json:"messages"`
			} `json:"body"`
		}
		if err := json.Unmarshal([]byte(l), &in); err != nil {
			t.Fatalf("input line: %v", err)
		}
		want[in.CustomID] = in.Body.Messages[1].Content
		inOrder = append(inOrder, in.CustomID)
	}
	if len(out) != len(lines) {
		t.Fatalf("output has %d lines, want %d", len(out), len(lines))
	}
	var outOrder []string
	for _, l := range out {
		prompt1, ok := want[l.CustomID]
		if !ok {
			t.Fatalf("output custom_id %q is not in the input (or repeated)", l.CustomID)
		}
		delete(want, l.CustomID)
		outOrder = append(outOrder, l.CustomID)
		if l.Response == nil || l.Response.StatusCode != 200 || l.Response.RequestID == "" || l.Error != nil {
			t.Fatalf("line %s: response %+v error %+v", l.CustomID, l.Response, l.Error)
		}
		var cc openai.ChatCompletion
		if err := json.Unmarshal(l.Response.Body, &cc); err != nil {
			t.Fatalf("line %s body: %v", l.CustomID, err)
		}
		wantPrompt := int64(aoaisim.PromptTokens([]string{"Summarise.", prompt1}, 0))
		if cc.Usage.PromptTokens != wantPrompt || cc.Usage.CompletionTokens != int64(aoaisim.TextTokens(cc.Choices[0].Message.Content)) {
			t.Errorf("line %s usage %+v, want prompt %d", l.CustomID, cc.Usage, wantPrompt)
		}
		if cc.JSON.ExtraFields["prompt_filter_results"].Raw() == "" {
			t.Errorf("line %s: prompt_filter_results missing", l.CustomID)
		}
		prompt += cc.Usage.PromptTokens
		completion += cc.Usage.CompletionTokens
	}
	if slices.Equal(inOrder, outOrder) {
		t.Error("output is in input order; Azure documents a different order")
	}
	return prompt, completion
}

func TestBatch_Lifecycle(t *testing.T) {
	t.Parallel()
	for _, surface := range []string{"classic", "v1"} {
		t.Run(surface, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, aoaisim.Config{Batch: aoaisim.BatchConfig{LinesPerMinute: 10}})
			c := map[string]openai.Client{"classic": s.classic, "v1": s.v1}[surface]
			ctx := context.Background()
			lines := chatLines(30, batchDep)
			content := joinLines(lines)
			fileID := upload(t, c, content, fourteenDays)

			var raw *http.Response
			b, err := c.Batches.New(ctx, openai.BatchNewParams{
				InputFileID: fileID, Endpoint: openai.BatchNewParamsEndpoint("/chat/completions"),
				CompletionWindow:   openai.BatchNewParamsCompletionWindow24h,
				Metadata:           shared.Metadata{"tenant": "t42"},
				OutputExpiresAfter: openai.BatchNewParamsOutputExpiresAfter{Seconds: fourteenDays},
			}, option.WithResponseInto(&raw), option.WithMaxRetries(0))
			if err != nil {
				t.Fatalf("Batches.New: %v", err)
			}
			if want := map[string]int{"classic": 201, "v1": 200}[surface]; raw.StatusCode != want {
				t.Errorf("create status = %d, want %d", raw.StatusCode, want)
			}
			if got := raw.Header.Get("deployment-enqueued-tokens"); got != strconv.FormatInt(aoaisim.EnqueuedTokens(int64(len(content))), 10) {
				t.Errorf("deployment-enqueued-tokens = %q, want ceil(%d/4)", got, len(content))
			}
			created := epoch().Unix()
			if b.Status != "validating" || b.CreatedAt != created || b.ExpiresAt != created+24*3600 ||
				b.Metadata["tenant"] != "t42" || b.InputFileID != fileID || b.CompletionWindow != "24h" || b.OutputFileID != "" {
				t.Fatalf("created batch = %+v", b)
			}

			s.clock.Advance(2 * time.Minute)
			b = waitStatus(t, c, b.ID, "in_progress")
			if b.InProgressAt != created+120 || b.RequestCounts.Total != 30 {
				t.Errorf("in progress: at %d total %d", b.InProgressAt, b.RequestCounts.Total)
			}
			s.clock.Advance(time.Minute) // 10 lines per minute
			waitFor(t, c, b.ID, "10 lines done", func(b *openai.Batch) bool { return b.RequestCounts.Completed == 10 })
			s.clock.Advance(2 * time.Minute)
			b = waitStatus(t, c, b.ID, "finalizing")
			if b.FinalizingAt != created+120+180 || b.OutputFileID != "" {
				t.Errorf("finalizing at %d, output %q", b.FinalizingAt, b.OutputFileID)
			}
			s.clock.Advance(time.Minute)
			b = waitStatus(t, c, b.ID, "completed")
			if b.CompletedAt != b.FinalizingAt+60 || b.RequestCounts.Completed != 30 || b.RequestCounts.Failed != 0 {
				t.Errorf("completed: at %d counts %+v", b.CompletedAt, b.RequestCounts)
			}
			prompt, completion := checkOutput(t, lines, readResults(t, c, b.OutputFileID))
			dep := s.srv.Stats().Deployments[2]
			if dep.PromptTokens != prompt || dep.CompletionTokens != completion || dep.EnqueuedTokens != 0 {
				t.Errorf("stats %+v, want prompt %d completion %d enqueued 0", dep, prompt, completion)
			}
			ef, err := c.Files.Get(ctx, b.ErrorFileID)
			if err != nil || ef.Bytes != 0 {
				t.Errorf("error file = %+v, %v; want present and empty", ef, err)
			}
			of, err := c.Files.Get(ctx, b.OutputFileID)
			if err != nil || of.Purpose != "batch_output" || of.ExpiresAt != b.CompletedAt+fourteenDays {
				t.Fatalf("output file = %+v, %v", of, err)
			}
			s.clock.Advance(fourteenDays * time.Second)
			_, err = c.Files.Get(ctx, b.OutputFileID)
			if e := apiError(t, err); e.StatusCode != 404 {
				t.Errorf("output after output_expires_after: %d, want 404", e.StatusCode)
			}
		})
	}
}

func TestBatch_SpeededClock(t *testing.T) {
	t.Parallel()
	speed := 200_000.0 // a 24 h window passes in under half a second
	s := newSim(t, aoaisim.Config{Clock: aoaisim.NewClock(time.Now(), speed)})
	lines := chatLines(200, batchDep)
	b, err := createBatch(context.Background(), s.v1, upload(t, s.v1, joinLines(lines), 0))
	if err != nil {
		t.Fatalf("Batches.New: %v", err)
	}
	b = waitStatus(t, s.v1, b.ID, "completed")
	if b.RequestCounts.Total != 200 || b.RequestCounts.Completed != 200 || b.RequestCounts.Failed != 0 {
		t.Errorf("counts = %+v", b.RequestCounts)
	}
	if !(b.CreatedAt < b.InProgressAt && b.InProgressAt < b.FinalizingAt && b.FinalizingAt < b.CompletedAt) {
		t.Errorf("timestamps out of order: %d %d %d %d", b.CreatedAt, b.InProgressAt, b.FinalizingAt, b.CompletedAt)
	}
	checkOutput(t, lines, readResults(t, s.v1, b.OutputFileID))
}

func TestBatch_List(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{})
	ctx := context.Background()
	fileID := upload(t, s.classic, joinLines(chatLines(2, batchDep)), 0)
	var ids []string
	for range 5 {
		b, err := createBatch(ctx, s.classic, fileID)
		if err != nil {
			t.Fatalf("Batches.New: %v", err)
		}
		ids = append([]string{b.ID}, ids...) // newest first
	}
	var listed []string
	iter := s.classic.Batches.ListAutoPaging(ctx, openai.BatchListParams{Limit: openai.Int(2)})
	for iter.Next() {
		listed = append(listed, iter.Current().ID)
	}
	if iter.Err() != nil || !slices.Equal(listed, ids) {
		t.Errorf("auto-paged list = %v (%v), want %v", listed, iter.Err(), ids)
	}
	page, err := s.v1.Batches.List(ctx, openai.BatchListParams{After: openai.String(ids[1]), Limit: openai.Int(2)})
	if err != nil || len(page.Data) != 2 || page.Data[0].ID != ids[2] || page.Data[1].ID != ids[3] || !page.HasMore {
		t.Errorf("page after %s = %+v, %v", ids[1], page, err)
	}
	page, err = s.v1.Batches.List(ctx, openai.BatchListParams{After: openai.String(ids[3]), Limit: openai.Int(2)})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != ids[4] || page.HasMore {
		t.Errorf("last page, after %s = %+v, %v; want %s alone and no more", ids[3], page, err, ids[4])
	}
	page, err = s.v1.Batches.List(ctx, openai.BatchListParams{After: openai.String(ids[4]), Limit: openai.Int(2)})
	if err != nil || len(page.Data) != 0 || page.HasMore {
		t.Errorf("page after the oldest = %+v, %v; want empty", page, err)
	}
}

func TestBatch_CreateErrors(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{})
	ctx := context.Background()
	good := upload(t, s.classic, joinLines(chatLines(2, batchDep)), 0)
	tests := []struct {
		name   string
		params openai.BatchNewParams
		status int
		param  string
	}{
		{"window", openai.BatchNewParams{InputFileID: good, Endpoint: "/chat/completions", CompletionWindow: "48h"}, 400, "completion_window"},
		{"embeddings endpoint", openai.BatchNewParams{InputFileID: good, Endpoint: "/v1/embeddings", CompletionWindow: "24h"}, 400, "endpoint"},
		{"unknown file", openai.BatchNewParams{InputFileID: "file-nope", Endpoint: "/chat/completions", CompletionWindow: "24h"}, 404, "file_id"},
		{"output expiry too short", openai.BatchNewParams{InputFileID: good, Endpoint: "/chat/completions", CompletionWindow: "24h",
			OutputExpiresAfter: openai.BatchNewParamsOutputExpiresAfter{Seconds: 3600}}, 400, "output_expires_after.seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := s.classic.Batches.New(ctx, tt.params)
			e := apiError(t, err)
			if e.StatusCode != tt.status || e.Param != tt.param {
				t.Errorf("error = %d param %q, want %d %q (%s)", e.StatusCode, e.Param, tt.status, tt.param, e.Message)
			}
		})
	}
}

func TestBatch_Quirks(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{Quirks: aoaisim.Quirks{EmptyFileIDs: true, ISOTimestamps: true, CapitalStatus: true}})
	b, err := createBatch(context.Background(), s.classic, upload(t, s.classic, joinLines(chatLines(1, batchDep)), 0))
	if err != nil {
		t.Fatalf("Batches.New: %v", err)
	}
	if b.Status != "Validating" || b.JSON.OutputFileID.Raw() != `""` || b.CreatedAt != 0 || b.JSON.CreatedAt.Raw() != `"2026-03-01T08:00:00Z"` {
		t.Errorf("quirks: status %q output %s created %d (%s)", b.Status, b.JSON.OutputFileID.Raw(), b.CreatedAt, b.JSON.CreatedAt.Raw())
	}
}
