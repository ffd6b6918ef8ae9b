package aoaisim

// chatCompletion is the chat.completion object, with Azure's filter
// annotations.
type chatCompletion struct {
	ID                  string              `json:"id"`
	Object              string              `json:"object"`
	Created             int64               `json:"created"`
	Model               string              `json:"model"`
	SystemFingerprint   string              `json:"system_fingerprint"`
	Choices             []chatChoice        `json:"choices"`
	PromptFilterResults []promptFilterEntry `json:"prompt_filter_results"`
	Usage               chatUsage           `json:"usage"`
}

type chatChoice struct {
	Index                int                    `json:"index"`
	FinishReason         string                 `json:"finish_reason"`
	Logprobs             *struct{}              `json:"logprobs"`
	Message              chatReply              `json:"message"`
	ContentFilterResults completionFilterResult `json:"content_filter_results"`
}

type chatReply struct {
	Role        string     `json:"role"`
	Content     string     `json:"content"`
	Refusal     *string    `json:"refusal"`
	Annotations []struct{} `json:"annotations"`
}

type chatUsage struct {
	PromptTokens            int                    `json:"prompt_tokens"`
	CompletionTokens        int                    `json:"completion_tokens"`
	TotalTokens             int                    `json:"total_tokens"`
	PromptTokensDetails     promptTokenDetails     `json:"prompt_tokens_details"`
	CompletionTokensDetails completionTokenDetails `json:"completion_tokens_details"`
}

type promptTokenDetails struct {
	AudioTokens  int `json:"audio_tokens"`
	CachedTokens int `json:"cached_tokens"`
}

type completionTokenDetails struct {
	AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
	AudioTokens              int `json:"audio_tokens"`
	ReasoningTokens          int `json:"reasoning_tokens"`
	RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
}

// complete runs the model: a prompt trigger refuses with HTTP 400
// content_filter; a completion trigger answers 200 with finish_reason
// content_filter and empty content (the completion tokens are still counted,
// as Azure bills them); otherwise the deterministic text. Usage counters of
// dep are updated.
func (s *Server) complete(dep *deploymentState, call *chatCall) (*chatCompletion, *apiError) {
	lowered := lowerAll(call.texts)
	if cat, hit := match(s.filter.prompt, lowered); hit {
		dep.filtered.Add(1)
		dep.requests.Add(1)
		return nil, s.filter.promptBlocked(cat)
	}
	blockCat, blocked := match(s.filter.completion, lowered)
	resp := &chatCompletion{
		ID:                  newID("chatcmpl-", 29),
		Object:              "chat.completion",
		Created:             s.clock.Now().Unix(),
		Model:               dep.modelName(),
		SystemFingerprint:   "fp_aoaisim",
		Choices:             make([]chatChoice, call.n),
		PromptFilterResults: []promptFilterEntry{{PromptIndex: 0, ContentFilterResults: safePrompt()}},
	}
	completion := 0
	for i := range call.n {
		text, truncated := s.completer.complete(call.seed, i, call.maxTokens, call.source)
		completion += TextTokens(text)
		ch := chatChoice{
			Index:                i,
			FinishReason:         "stop",
			Message:              chatReply{Role: "assistant", Content: text, Annotations: []struct{}{}},
			ContentFilterResults: safeCompletion(),
		}
		switch {
		case blocked:
			ch.FinishReason = "content_filter"
			ch.Message.Content = ""
			flagCompletion(&ch.ContentFilterResults, blockCat)
		case truncated:
			ch.FinishReason = "length"
		}
		resp.Choices[i] = ch
	}
	if blocked {
		dep.filtered.Add(1)
	}
	resp.Usage = chatUsage{PromptTokens: call.promptTokens, CompletionTokens: completion, TotalTokens: call.promptTokens + completion}
	dep.requests.Add(1)
	dep.promptTokens.Add(int64(call.promptTokens))
	dep.completionTokens.Add(int64(completion))
	s.meterServed(dep, int64(call.promptTokens), int64(completion))
	return resp, nil
}
