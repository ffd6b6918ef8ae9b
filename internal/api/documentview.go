package api

import "github.com/offpath/offpath/internal/document"

// documentView is a document's status as the API shows it (the Document
// schema): the status's fields, and its usage as the DocumentUsage schema
// has it, the tokens and model calls with how those calls went.
type documentView struct {
	statusFields
	Usage documentUsage `json:"usage"`
}

// statusFields is document.Status without its methods (its own JSON), so
// that documentView lists its fields and replaces its usage.
type statusFields document.Status

// documentUsage is the DocumentUsage schema.
type documentUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CachedTokens     int64 `json:"cached_tokens,omitempty"`
	Requests         int64 `json:"requests"`
	Attempts         int64 `json:"attempts"`
	Throttled        int64 `json:"throttled"`
	WaitedMS         int64 `json:"waited_ms,omitempty"`
}

func viewDocument(st document.Status) documentView {
	u, c := st.Usage, st.Calls
	return documentView{statusFields: statusFields(st), Usage: documentUsage{
		PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.CachedTokens,
		Requests: u.Requests, Attempts: c.Attempts, Throttled: c.Throttled, WaitedMS: c.Waited.Milliseconds(),
	}}
}

func viewDocuments(list []document.Status) []documentView {
	out := make([]documentView, len(list))
	for i, st := range list {
		out[i] = viewDocument(st)
	}
	return out
}
