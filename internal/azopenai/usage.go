package azopenai

import (
	"fmt"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
)

// Usage is what the service reported for the requests of one call, summed.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	// CachedTokens are the prompt tokens served from the prompt cache
	// (included in PromptTokens).
	CachedTokens int64 `json:"cached_tokens"`
	// ReasoningTokens are the completion tokens spent reasoning (included in
	// CompletionTokens).
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// Add adds v to u.
func (u *Usage) Add(v Usage) {
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
	u.TotalTokens += v.TotalTokens
	u.CachedTokens += v.CachedTokens
	u.ReasoningTokens += v.ReasoningTokens
}

func chatUsage(u openai.CompletionUsage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		TotalTokens:      u.TotalTokens,
		CachedTokens:     u.PromptTokensDetails.CachedTokens,
		ReasoningTokens:  u.CompletionTokensDetails.ReasoningTokens,
	}
}

// Trace counts what one call took.
type Trace struct {
	// Requests are the requests the model answered, a refusal included (one
	// per embeddings batch, one per summary).
	Requests int `json:"requests"`
	// Attempts are all HTTP attempts, Requests included.
	Attempts int `json:"attempts"`
	// Throttled counts the 429s among the attempts.
	Throttled int `json:"throttled"`
	// Waited is the time spent between attempts (not in the rate limiter).
	Waited time.Duration `json:"waited"`
}

func (t *Trace) add(v Trace) {
	t.Requests += v.Requests
	t.Attempts += v.Attempts
	t.Throttled += v.Throttled
	t.Waited += v.Waited
}

// Stages of a refusal.
const (
	StagePrompt     = "prompt"     // HTTP 400 content_filter: the input was blocked
	StageCompletion = "completion" // HTTP 200, finish_reason content_filter
)

// Refusal is a content-filter refusal. It is wrapped in an outcome.Refused
// error; find it with errors.As.
type Refusal struct {
	// Stage is StagePrompt or StageCompletion.
	Stage string
	// Categories are the filter categories that were filtered, sorted
	// ("hate", "jailbreak", "self_harm", "sexual", "violence", ...), when
	// the service named them.
	Categories []string
	// Usage is what the service charged for the whole call up to and
	// including the refused request: a refused completion reports its
	// usage; a blocked prompt reports none.
	Usage Usage
}

func (r *Refusal) Error() string {
	msg := "content filter refused the " + r.Stage
	if len(r.Categories) > 0 {
		msg += fmt.Sprintf(" (%s)", strings.Join(r.Categories, ", "))
	}
	return msg
}
