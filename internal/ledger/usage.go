package ledger

import "github.com/offpath/offpath/internal/catalog"

// Usage is what one unit, or a sum of units, consumed: the one token-usage
// type of the domain, whether a model call reported it (the queue path), a
// Global Batch output line (the batch path), a part, a job, a document's
// version, a ledger row, a rollup or a report summed it. Cached tokens are
// part of the prompt tokens and reasoning tokens part of the completion
// tokens, as Azure OpenAI reports them. The adapters read their wire
// formats into it; its JSON names are the ones Azure uses.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CachedTokens     int64 `json:"cached_tokens"`
	ReasoningTokens  int64 `json:"reasoning_tokens"`
	// Requests are the model calls (or batch lines) made; Refusals those of
	// them a content filter declined (still metered: a refusal is a result).
	Requests int64 `json:"requests"`
	Refusals int64 `json:"refusals"`
	// Cost is estimated from the catalog's prices when an entry is made
	// (CostAt); zero where nothing was priced.
	Cost catalog.Money `json:"cost,omitempty"`
}

// TotalTokens is what budgets count, and what Azure reports as
// total_tokens: prompt plus completion tokens.
func (u Usage) TotalTokens() int64 { return u.PromptTokens + u.CompletionTokens }

// IsZero says whether u consumed nothing at all.
func (u Usage) IsZero() bool { return u == Usage{} }

// CostAt is what u's tokens cost at price p (cached prompt tokens at the
// cached rate).
func (u Usage) CostAt(p catalog.Price) catalog.Money {
	return p.Cost(u.PromptTokens, u.CachedTokens, u.CompletionTokens)
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.CachedTokens += o.CachedTokens
	u.ReasoningTokens += o.ReasoningTokens
	u.Requests += o.Requests
	u.Refusals += o.Refusals
	u.Cost += o.Cost
}

// Sub takes o from u.
func (u *Usage) Sub(o Usage) {
	u.PromptTokens -= o.PromptTokens
	u.CompletionTokens -= o.CompletionTokens
	u.CachedTokens -= o.CachedTokens
	u.ReasoningTokens -= o.ReasoningTokens
	u.Requests -= o.Requests
	u.Refusals -= o.Refusals
	u.Cost -= o.Cost
}
