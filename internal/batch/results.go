package batch

import (
	"bufio"
	"encoding/json"
	"fmt"

	"github.com/offpath/offpath/internal/batchfile"
)

// ResultLine is one line of a job's results file: one per item, whatever
// became of it. Answer is the model's text; it is never logged.
type ResultLine struct {
	ItemID       string       `json:"item_id"`
	Outcome      Outcome      `json:"outcome"`
	Answer       string       `json:"answer,omitempty"`
	FinishReason string       `json:"finish_reason,omitempty"`
	RefusedBy    string       `json:"refused_by,omitempty"`
	Categories   []string     `json:"categories,omitempty"`
	Error        *ResultError `json:"error,omitempty"`
	Usage        *ResultUsage `json:"usage,omitempty"`
	Part         int          `json:"part"`
	Line         int          `json:"line"`
	// Source is SourceSync for an item the deadline fallback answered
	// (empty: the batch).
	Source string `json:"source,omitempty"`
}

// ResultError says why an item failed, expired or was cancelled.
type ResultError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// ResultUsage is an item's usage as Azure reported it.
type ResultUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	CachedTokens     int64 `json:"cached_tokens,omitempty"`
	ReasoningTokens  int64 `json:"reasoning_tokens,omitempty"`
}

// resultWriter encodes result lines.
type resultWriter struct {
	bw  *bufio.Writer
	enc *json.Encoder
}

func newResultWriter(w *bufio.Writer) *resultWriter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &resultWriter{bw: w, enc: enc}
}

func (r *resultWriter) write(l *ResultLine) error {
	if err := r.enc.Encode(l); err != nil {
		return fmt.Errorf("write result line: %w", err)
	}
	return nil
}

// outcomeOf maps a parsed output line to an item outcome: Azure reports
// requests its window or a cancellation cut off as error lines.
func outcomeOf(res *batchfile.Result) Outcome {
	switch res.Outcome {
	case batchfile.OK:
		return OK
	case batchfile.Refused:
		return Refused
	}
	switch res.Code {
	case "batch_expired":
		return ExpiredOutcome
	case "batch_cancelled", "cancelled":
		return CancelledOutcome
	}
	return FailedOutcome
}

// resultOf renders a parsed line for the item it belongs to.
func resultOf(res *batchfile.Result, itemID string, part, line int, o Outcome) ResultLine {
	l := ResultLine{ItemID: itemID, Outcome: o, Answer: res.Text, FinishReason: res.FinishReason,
		RefusedBy: res.RefusedBy, Categories: res.Categories, Part: part, Line: line}
	if res.Code != "" || o == FailedOutcome {
		l.Error = &ResultError{Code: res.Code, Message: clipMessage(res.Message)}
		if l.Error.Code == "" {
			l.Error.Code = fmt.Sprintf("http_%d", res.StatusCode)
		}
	}
	if u := res.Usage; !u.IsZero() {
		l.Usage = &ResultUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens(),
			CachedTokens: u.CachedTokens, ReasoningTokens: u.ReasoningTokens}
	}
	return l
}

func clipMessage(s string) string {
	if len(s) > 500 {
		return s[:500] + "…"
	}
	return s
}
