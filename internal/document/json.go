package document

import (
	"encoding/json"
	"time"

	"github.com/offpath/offpath/internal/catalog"
)

// usageJSON is the "usage" object of a Status's JSON: its Usage and its
// Calls side by side, in the names statuses have always been stored with
// (the fields a version that ran no model call leaves empty are omitted),
// so that every stored status reads back the same.
type usageJSON struct {
	PromptTokens     int64         `json:"prompt_tokens"`
	CompletionTokens int64         `json:"completion_tokens"`
	CachedTokens     int64         `json:"cached_tokens,omitempty"`
	ReasoningTokens  int64         `json:"reasoning_tokens,omitempty"`
	Requests         int64         `json:"requests"`
	Refusals         int64         `json:"refusals,omitempty"`
	Cost             catalog.Money `json:"cost,omitempty"`
	Attempts         int64         `json:"attempts"`
	Throttled        int64         `json:"throttled"`
	// WaitedMS is Calls.Waited in milliseconds.
	WaitedMS int64 `json:"waited_ms,omitempty"`
}

// fields is Status without its methods, for the JSON of everything but
// the usage.
type fields Status

// statusJSON is a Status's JSON: its fields, and its usage and calls as
// one object (Status.Usage and Status.Calls are tagged "-").
type statusJSON struct {
	fields
	Usage usageJSON `json:"usage"`
}

func (s Status) wire() statusJSON {
	u, c := s.Usage, s.Calls
	return statusJSON{fields: fields(s), Usage: usageJSON{
		PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.CachedTokens,
		ReasoningTokens: u.ReasoningTokens, Requests: u.Requests, Refusals: u.Refusals, Cost: u.Cost,
		Attempts: c.Attempts, Throttled: c.Throttled, WaitedMS: c.Waited.Milliseconds(),
	}}
}

// MarshalJSON writes s with its Usage and Calls as one "usage" object.
func (s Status) MarshalJSON() ([]byte, error) { return json.Marshal(s.wire()) }

// UnmarshalJSON reads what MarshalJSON writes, and every status stored
// before. Like the default decoding, it leaves what b does not name as it
// was.
func (s *Status) UnmarshalJSON(b []byte) error {
	v := s.wire()
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Status(v.fields)
	u := v.Usage
	s.Usage.PromptTokens, s.Usage.CompletionTokens, s.Usage.CachedTokens = u.PromptTokens, u.CompletionTokens, u.CachedTokens
	s.Usage.ReasoningTokens, s.Usage.Requests, s.Usage.Refusals, s.Usage.Cost = u.ReasoningTokens, u.Requests, u.Refusals, u.Cost
	s.Calls = Calls{Attempts: u.Attempts, Throttled: u.Throttled, Waited: time.Duration(u.WaitedMS) * time.Millisecond}
	return nil
}
