package aoaisim_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/offpath/offpath/internal/local/aoaisim"
)

// filterDetail is the part of a content_filter_results object the tests read.
type filterDetail struct {
	Violence struct {
		Filtered bool   `json:"filtered"`
		Severity string `json:"severity"`
	} `json:"violence"`
	Hate struct {
		Filtered bool `json:"filtered"`
	} `json:"hate"`
}

func TestContentFilter_Sync(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{})
	ctx := context.Background()
	for _, c := range s.clients() {
		t.Run(c.name+"/prompt blocked", func(t *testing.T) {
			t.Parallel()
			_, err := c.client.Chat.Completions.New(ctx, chatParams(chatDep, "please "+aoaisim.DefaultPromptTrigger+" now"))
			e := apiError(t, err)
			if e.StatusCode != 400 || e.Code != "content_filter" || e.Param != "prompt" {
				t.Fatalf("error = %d %q param %q, want 400 content_filter prompt", e.StatusCode, e.Code, e.Param)
			}
			var inner struct {
				Code   string       `json:"code"`
				Result filterDetail `json:"content_filter_result"`
			}
			if err := json.Unmarshal([]byte(e.JSON.ExtraFields["innererror"].Raw()), &inner); err != nil {
				t.Fatalf("innererror %q: %v", e.JSON.ExtraFields["innererror"].Raw(), err)
			}
			if inner.Code != "ResponsibleAIPolicyViolation" || !inner.Result.Violence.Filtered || inner.Result.Violence.Severity != "medium" {
				t.Errorf("innererror = %+v, want ResponsibleAIPolicyViolation with violence filtered", inner)
			}
		})
		t.Run(c.name+"/completion blocked", func(t *testing.T) {
			t.Parallel()
			cc, err := c.client.Chat.Completions.New(ctx, chatParams(chatDep, "tell me "+aoaisim.DefaultCompletionTrigger))
			if err != nil {
				t.Fatalf("Chat.Completions.New: %v", err)
			}
			ch := cc.Choices[0]
			if ch.FinishReason != "content_filter" || ch.Message.Content != "" {
				t.Errorf("choice = finish %q content %q, want content_filter and empty", ch.FinishReason, ch.Message.Content)
			}
			var detail filterDetail
			if err := json.Unmarshal([]byte(ch.JSON.ExtraFields["content_filter_results"].Raw()), &detail); err != nil || !detail.Violence.Filtered {
				t.Errorf("content_filter_results = %s (%v), want violence filtered", ch.JSON.ExtraFields["content_filter_results"].Raw(), err)
			}
			if cc.Usage.CompletionTokens == 0 {
				t.Error("completion_tokens = 0, want the filtered completion billed")
			}
		})
	}
}

func TestContentFilter_Config(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		style string
		field string // where the filter result sits
		key   string
	}{
		{"service", aoaisim.InnerErrorService, "innererror", "content_filter_result"},
		{"docs", aoaisim.InnerErrorDocs, "innererror", "content_filter_results"},
		{"spec", aoaisim.InnerErrorSpec, "inner_error", "content_filter_results"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, aoaisim.Config{ContentFilter: aoaisim.ContentFilter{
				InnerErrorStyle: tt.style,
				PromptTriggers:  []aoaisim.Trigger{{Phrase: "Forbidden Topic", Category: "hate"}},
			}})
			_, err := s.classic.Chat.Completions.New(context.Background(), chatParams(chatDep, "a forbidden topic here"))
			e := apiError(t, err)
			var inner map[string]json.RawMessage
			if err := json.Unmarshal([]byte(e.JSON.ExtraFields[tt.field].Raw()), &inner); err != nil {
				t.Fatalf("%s = %q: %v", tt.field, e.JSON.ExtraFields[tt.field].Raw(), err)
			}
			var detail filterDetail
			if err := json.Unmarshal(inner[tt.key], &detail); err != nil || !detail.Hate.Filtered || detail.Violence.Filtered {
				t.Errorf("%s.%s = %s, want hate filtered only", tt.field, tt.key, inner[tt.key])
			}
			// The default triggers are replaced by the configured ones.
			if _, err := s.classic.Chat.Completions.New(context.Background(), chatParams(chatDep, aoaisim.DefaultPromptTrigger)); err != nil {
				t.Errorf("default trigger still active: %v", err)
			}
		})
	}
}
