package ledger

import (
	"context"
	"time"
)

// Sample is one change to the ledger as token metrics: the tokens a write
// added to a row (its new totals less the row's previous ones), never the
// row's totals, so that the samples of every write sum to the ledger
// exactly however often a row is rewritten.
type Sample struct {
	Time       time.Time `json:"time"`
	Tenant     string    `json:"tenant"`
	Alias      string    `json:"alias"`
	Deployment string    `json:"deployment"`
	Path       Path      `json:"path"`
	// Unfinished says the row's attempt had not finished its work when
	// this was written (see Entry.Unfinished).
	Unfinished       bool  `json:"unfinished,omitempty"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// Metrics receives the ledger's changes as they are written. Emit must not
// block on the network nor fail the write: a metric is a copy of the
// ledger, never its record.
type Metrics interface {
	Emit(ctx context.Context, samples []Sample)
}

// Delta is the sample of writing e over a row that held prev (the zero
// Usage when there was none), and false when the write changes no tokens.
// A rewrite that lowers a row yields negative tokens: the samples still
// sum to the row.
func Delta(prev Usage, e *Entry, at time.Time) (Sample, bool) {
	p, c := e.PromptTokens-prev.PromptTokens, e.CompletionTokens-prev.CompletionTokens
	if p == 0 && c == 0 {
		return Sample{}, false
	}
	return Sample{Time: at.UTC(), Tenant: e.Tenant, Alias: e.Alias, Deployment: e.Deployment, Path: e.Path,
		Unfinished: e.Unfinished, PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}, true
}
