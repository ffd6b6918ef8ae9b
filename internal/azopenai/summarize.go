package azopenai

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/outcome"
	"github.com/offpath/offpath/internal/tokens"
)

// systemPrompt asks for a small JSON object; n is the number of keywords.
func systemPrompt(n int) string {
	return fmt.Sprintf(`You summarise documents for a search index. Reply with one JSON object and nothing else: {"summary": "<at most three sentences>", "keywords": ["<at most %d keywords or short phrases>"]}.`, n)
}

// Summarize asks the chat deployment for a summary and keywords of text,
// with at most maxTokens of completion. Text beyond
// QueueConfig.SummaryInputTokens is cut at a rune boundary (ingest.Summary.Truncated).
//
// A refusal (either shape) is an outcome.Refused error wrapping an *ingest.Refusal;
// the returned Summary then carries the usage too, so it can be metered.
func (c *QueueClient) Summarize(ctx context.Context, deployment, text string, maxTokens int) (ingest.Summary, error) {
	var out ingest.Summary
	if maxTokens < 1 {
		return out, outcome.Reject("invalid summary request", fmt.Errorf("max tokens %d", maxTokens))
	}
	if limit := tokens.MaxBytes(c.cfg.SummaryInputTokens); len(text) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text, out.Truncated = text[:cut], true
	}
	system := systemPrompt(c.cfg.Keywords)
	params := openai.ChatCompletionNewParams{
		Model:               deployment,
		Messages:            []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage(text)},
		MaxCompletionTokens: openai.Int(int64(maxTokens)),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONObject: &shared.ResponseFormatJSONObjectParam{},
		},
	}
	var resp *openai.ChatCompletion
	err := c.do(ctx, request{
		deployment: deployment,
		operation:  "chat",
		charge:     int64(tokens.Prompt(system, text) + maxTokens),
		call: func(ctx context.Context, opts ...option.RequestOption) error {
			var err error
			resp, err = c.oa.Chat.Completions.New(ctx, params, opts...)
			return err
		},
	}, &out.Trace)
	var sig *refusalSignal
	if errors.As(err, &sig) {
		return out, refuse(&ingest.Refusal{Stage: ingest.StagePrompt, Categories: promptCategories(sig.apiErr)})
	}
	if err != nil {
		return out, err
	}
	out.Usage = chatUsage(resp.Usage)
	out.Model = resp.Model
	if len(resp.Choices) == 0 {
		return out, outcome.Retry(fmt.Errorf("chat %s: no choices in the reply", deployment), 0)
	}
	ch := resp.Choices[0]
	out.FinishReason = ch.FinishReason
	if ch.FinishReason == "content_filter" {
		return out, refuse(&ingest.Refusal{Stage: ingest.StageCompletion, Categories: completionCategories(ch), Usage: out.Usage})
	}
	out.Text, out.Keywords, out.Structured = parseSummary(ch.Message.Content, text, c.cfg.Keywords)
	return out, nil
}
