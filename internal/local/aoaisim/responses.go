package aoaisim

import (
	"encoding/json"
	"fmt"
)

// The Responses API, as Global Batch runs it (a batch whose endpoint is
// /responses, lines whose url is /v1/responses). A line's body is turned
// into the same call as the equivalent chat request (instructions as the
// system message, then the input's messages), so the answer, the usage and
// the content filter are the chat path's; the output line carries a
// response object:
//
//   - answered: status "completed", one message with an output_text part;
//   - cut at max_output_tokens: status "incomplete", incomplete_details
//     {"reason":"max_output_tokens"};
//   - completion filtered: status "incomplete", incomplete_details
//     {"reason":"content_filter"}, no output, the usage still billed, and
//     Azure's content_filters annotation naming the category;
//   - prompt filtered: HTTP 400 content_filter, as for chat.

// responsesRequest is the part of a Responses body the simulator reads.
type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    *string         `json:"instructions"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Stream          bool            `json:"stream"`
}

// responsesItem is one input item: a message with string content or
// input_text / input_image parts.
type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type responsesPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// call converts the body into the chat call it stands for.
func (req *responsesRequest) call() (*chatCall, *apiError) {
	chat := chatRequest{Model: req.Model, MaxTokens: req.MaxOutputTokens, Stream: req.Stream}
	if req.Instructions != nil {
		chat.Messages = append(chat.Messages, chatMessage{Role: "system", Content: messageContent{text: *req.Instructions}})
	}
	var text string
	var items []responsesItem
	switch {
	case len(req.Input) == 0 || string(req.Input) == "null":
		return nil, invalidRequest("input", "'input' is a required property.")
	case json.Unmarshal(req.Input, &text) == nil:
		chat.Messages = append(chat.Messages, chatMessage{Role: "user", Content: messageContent{text: text}})
	case json.Unmarshal(req.Input, &items) == nil:
		for i, it := range items {
			if it.Type != "" && it.Type != "message" {
				return nil, invalidRequest(fmt.Sprintf("input[%d].type", i), fmt.Sprintf("input item type '%s' is not supported by the simulator.", it.Type))
			}
			c, err := responsesContent(it.Content)
			if err != nil {
				return nil, invalidRequest(fmt.Sprintf("input[%d].content", i), err.Error())
			}
			chat.Messages = append(chat.Messages, chatMessage{Role: it.Role, Content: c})
		}
	default:
		return nil, invalidRequest("input", "'input' must be a string or an array of input items.")
	}
	return chat.call()
}

// responsesContent reads a message's content: a string, or parts whose
// text is concatenated (input_text, output_text) and whose images count.
func responsesContent(raw json.RawMessage) (messageContent, error) {
	var c messageContent
	if json.Unmarshal(raw, &c.text) == nil {
		return c, nil
	}
	var parts []responsesPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return c, fmt.Errorf("content must be a string or an array of parts")
	}
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text":
			c.text += p.Text
		case "input_image":
			c.images++
		}
	}
	return c, nil
}

// responseObject is a Responses API response.
type responseObject struct {
	ID                string                  `json:"id"`
	Object            string                  `json:"object"`
	CreatedAt         float64                 `json:"created_at"`
	Status            string                  `json:"status"`
	Error             *struct{}               `json:"error"`
	IncompleteDetails *responseIncomplete     `json:"incomplete_details"`
	Model             string                  `json:"model"`
	Output            []responseOutputMessage `json:"output"`
	ContentFilters    []responseContentFilter `json:"content_filters"`
	Usage             responseUsage           `json:"usage"`
}

type responseIncomplete struct {
	Reason string `json:"reason"`
}

type responseOutputMessage struct {
	ID      string               `json:"id"`
	Type    string               `json:"type"`
	Status  string               `json:"status"`
	Role    string               `json:"role"`
	Content []responseOutputText `json:"content"`
}

type responseOutputText struct {
	Type        string     `json:"type"`
	Text        string     `json:"text"`
	Annotations []struct{} `json:"annotations"`
}

// responseContentFilter is one of Azure's content_filters annotations.
type responseContentFilter struct {
	Blocked              bool   `json:"blocked"`
	SourceType           string `json:"source_type"`
	ContentFilterResults any    `json:"content_filter_results"`
}

type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// asResponse renders a (single-choice) chat completion as the response
// object the Responses API returns for the same call.
func asResponse(cc *chatCompletion) *responseObject {
	r := &responseObject{
		ID: newID("resp_", 48), Object: "response", CreatedAt: float64(cc.Created), Status: "completed",
		Model: cc.Model, Output: []responseOutputMessage{},
		ContentFilters: []responseContentFilter{{SourceType: "prompt", ContentFilterResults: safePrompt()}},
	}
	r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.TotalTokens = cc.Usage.PromptTokens, cc.Usage.CompletionTokens, cc.Usage.TotalTokens
	if len(cc.Choices) == 0 {
		return r
	}
	ch := cc.Choices[0]
	r.ContentFilters = append(r.ContentFilters, responseContentFilter{
		Blocked: ch.FinishReason == "content_filter", SourceType: "completion", ContentFilterResults: ch.ContentFilterResults})
	msgStatus := "completed"
	switch ch.FinishReason {
	case "content_filter":
		r.Status, r.IncompleteDetails = "incomplete", &responseIncomplete{Reason: "content_filter"}
		return r // nothing of the answer is returned
	case "length":
		r.Status, r.IncompleteDetails, msgStatus = "incomplete", &responseIncomplete{Reason: "max_output_tokens"}, "incomplete"
	}
	r.Output = append(r.Output, responseOutputMessage{ID: newID("msg_", 48), Type: "message", Status: msgStatus, Role: "assistant",
		Content: []responseOutputText{{Type: "output_text", Text: ch.Message.Content, Annotations: []struct{}{}}}})
	return r
}
