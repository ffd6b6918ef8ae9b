package aoaisim_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/offpath/offpath/internal/local/aoaisim"
)

// responsesLine is one batch input line for the Responses route.
func responsesLine(customID, deployment, prompt string) string {
	line, _ := json.Marshal(map[string]any{
		"custom_id": customID, "method": "POST", "url": "/v1/responses",
		"body": map[string]any{"model": deployment, "instructions": "Summarise.", "max_output_tokens": 64,
			"input": []map[string]any{{"role": "user", "content": []map[string]string{{"type": "input_text", "text": prompt}}}}},
	})
	return string(line)
}

// A /responses batch answers with response objects, which openai-go
// decodes: completed answers, a filtered completion as status incomplete
// with incomplete_details.reason content_filter and its usage, a filtered
// prompt as HTTP 400 content_filter in the error file.
func TestBatch_Responses(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{Batch: aoaisim.BatchConfig{LinesPerMinute: 600}})
	ctx := context.Background()
	lines := []string{
		responsesLine("ok", batchDep, "ticket 1: the printer is on fire"),
		responsesLine("refused-answer", batchDep, "ticket 2: "+aoaisim.DefaultCompletionTrigger),
		responsesLine("refused-prompt", batchDep, "ticket 3: "+aoaisim.DefaultPromptTrigger),
	}
	file := upload(t, s.v1, joinLines(lines), 0)
	b, err := s.v1.Batches.New(ctx, openai.BatchNewParams{InputFileID: file, Endpoint: openai.BatchNewParamsEndpointV1Responses,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatalf("Batches.New: %v", err)
	}
	b = waitFor(t, s.v1, b.ID, "completed", func(b *openai.Batch) bool {
		s.clock.Advance(time.Minute) // validation, three lines, finalizing
		return b.Status == openai.BatchStatusCompleted
	})
	if b.RequestCounts.Completed != 2 || b.RequestCounts.Failed != 1 {
		t.Errorf("request_counts %+v, want 2 completed and 1 failed", b.RequestCounts)
	}
	got := map[string]resultLine{}
	for _, l := range append(readResults(t, s.v1, b.OutputFileID), readResults(t, s.v1, b.ErrorFileID)...) {
		got[l.CustomID] = l
	}
	decode := func(id string) responses.Response {
		t.Helper()
		l := got[id]
		if l.Response == nil || l.Response.StatusCode != 200 {
			t.Fatalf("line %s: %+v", id, l)
		}
		var r responses.Response
		if err := json.Unmarshal(l.Response.Body, &r); err != nil {
			t.Fatalf("line %s: %v", id, err)
		}
		return r
	}
	ok := decode("ok")
	if ok.Status != responses.ResponseStatusCompleted || ok.OutputText() == "" || ok.Usage.InputTokens == 0 || ok.Usage.OutputTokens != int64(aoaisim.TextTokens(ok.OutputText())) {
		t.Errorf("answered line: status %s, text %q, usage %+v", ok.Status, ok.OutputText(), ok.Usage)
	}
	ref := decode("refused-answer")
	if ref.Status != responses.ResponseStatusIncomplete || ref.IncompleteDetails.Reason != "content_filter" || ref.OutputText() != "" ||
		ref.Usage.OutputTokens == 0 || ref.Usage.TotalTokens != ref.Usage.InputTokens+ref.Usage.OutputTokens {
		t.Errorf("filtered completion: status %s, reason %q, text %q, usage %+v", ref.Status, ref.IncompleteDetails.Reason, ref.OutputText(), ref.Usage)
	}
	if raw := ref.JSON.ExtraFields["content_filters"].Raw(); raw == "" {
		t.Error("filtered completion: no content_filters annotation")
	}
	if p := got["refused-prompt"]; p.Response == nil || p.Response.StatusCode != 400 {
		t.Errorf("filtered prompt: %+v, want HTTP 400 in the error file", p)
	}
}
