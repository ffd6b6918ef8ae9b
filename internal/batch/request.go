package batch

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/ident"
)

// Limits on what a tenant may send.
const (
	MaxItemIDLen       = 256
	MaxPromptBytes     = 1 << 20
	MaxMessages        = 64
	MaxMaxTokens       = 1 << 20
	MaxMetadataPairs   = 16
	MaxMetadataKeyLen  = 64
	MaxMetadataValLen  = 512
	MaxIdempotencyKey  = 255
	MaxInputBlobLen    = 1024
	maxMessageRoleLen  = 32
	defaultSystemLabel = "system"
)

// Request is a tenant's batch submission. Items is inline; InputBlob names
// a JSONL of items in the tenant's area of the uploads container instead
// (for corpora too large for a request body). Each JSONL line is an Item.
type Request struct {
	Alias        string
	SystemPrompt string
	// MaxTokens is the default max_tokens of items that set none.
	MaxTokens      int
	Metadata       map[string]string
	IdempotencyKey string
	// Fingerprint identifies the request's content, so that reusing an
	// idempotency key for a different request is refused.
	Fingerprint string
	Items       []Item
	InputBlob   string
	// CompleteBy is when the answers are needed (zero: no deadline); see
	// checkCompleteBy for what is accepted.
	CompleteBy time.Time
	// Attributes are recorded with the job for the door that submitted it
	// (the OpenAI-compatible door keeps its input file id there); they are
	// not the tenant's metadata.
	Attributes map[string]string
	// Urgent asks for the job to be submitted on its own as soon as quota
	// allows, never held to be packed with other small jobs.
	Urgent bool
}

// Item is one request of a job: the tenant's id, and a prompt (added as a
// user message after the job's system prompt) or complete messages.
type Item struct {
	ID        string              `json:"id"`
	Prompt    string              `json:"prompt,omitempty"`
	Messages  []batchfile.Message `json:"messages,omitempty"`
	MaxTokens int                 `json:"max_tokens,omitempty"`
	// MaxCompletionTokens is sent as max_completion_tokens instead of
	// max_tokens (reasoning models require it).
	MaxCompletionTokens int `json:"max_completion_tokens,omitempty"`
	// Temperature is sent when set.
	Temperature *float64 `json:"temperature,omitempty"`
}

// InvalidError is a submission that can never be accepted. The message
// names the field and never quotes more than a little of the input.
type InvalidError struct {
	Code    string
	Message string
}

func (e *InvalidError) Error() string { return e.Code + ": " + e.Message }

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Reasons a submission is refused, for errors.Is.
var (
	ErrInvalid = errors.New("invalid batch request")
	// ErrAliasNotAllowed: the tenant may not use the alias (or it does not
	// exist: a tenant cannot tell which).
	ErrAliasNotAllowed = errors.New("model alias not allowed")
)

func invalid(code, format string, args ...any) error {
	return &InvalidError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// checkRequest validates everything but the items.
func checkRequest(r *Request) error {
	switch {
	case r.Alias == "":
		return invalid("alias_required", "alias: a model alias is required")
	case len(r.Items) == 0 && r.InputBlob == "":
		return invalid("no_items", "items: at least one item is required (or input_blob)")
	case len(r.Items) > 0 && r.InputBlob != "":
		return invalid("items_and_input_blob", "give items or input_blob, not both")
	case r.MaxTokens < 0 || r.MaxTokens > MaxMaxTokens:
		return invalid("invalid_max_tokens", "max_tokens: must be within 1..%d", MaxMaxTokens)
	case !utf8.ValidString(r.SystemPrompt) || len(r.SystemPrompt) > MaxPromptBytes:
		return invalid("invalid_system_prompt", "system_prompt: must be valid UTF-8 of at most %d bytes", MaxPromptBytes)
	case len(r.IdempotencyKey) > MaxIdempotencyKey || !ident.Valid(r.IdempotencyKey):
		return invalid("invalid_idempotency_key", "idempotency_key: printable text of at most %d bytes, without control or format characters", MaxIdempotencyKey)
	case len(r.Metadata) > MaxMetadataPairs:
		return invalid("invalid_metadata", "metadata: at most %d pairs", MaxMetadataPairs)
	}
	for k, v := range r.Metadata {
		if k == "" || len(k) > MaxMetadataKeyLen || len(v) > MaxMetadataValLen || !ident.Valid(k) || !ident.Valid(v) {
			return invalid("invalid_metadata", "metadata: keys of 1..%d and values of at most %d printable bytes", MaxMetadataKeyLen, MaxMetadataValLen)
		}
	}
	return nil
}

// checkItem validates one item; n is its 1-based position for messages.
func checkItem(it *Item, n int) error {
	where := fmt.Sprintf("items[%d]", n-1)
	switch {
	case it.ID == "":
		return invalid("invalid_item_id", "%s.id: required", where)
	case len(it.ID) > MaxItemIDLen:
		return invalid("invalid_item_id", "%s.id: %d bytes; at most %d", where, len(it.ID), MaxItemIDLen)
	case !ident.Valid(it.ID):
		return invalid("invalid_item_id", "%s.id: must be printable UTF-8 without control or format characters", where)
	case it.Prompt == "" && len(it.Messages) == 0:
		return invalid("invalid_item", "%s (id %q): a prompt or messages are required", where, clip(it.ID))
	case it.Prompt != "" && len(it.Messages) > 0:
		return invalid("invalid_item", "%s (id %q): give a prompt or messages, not both", where, clip(it.ID))
	case len(it.Messages) > MaxMessages:
		return invalid("invalid_item", "%s (id %q): at most %d messages", where, clip(it.ID), MaxMessages)
	case it.MaxTokens < 0 || it.MaxTokens > MaxMaxTokens || it.MaxCompletionTokens < 0 || it.MaxCompletionTokens > MaxMaxTokens:
		return invalid("invalid_max_tokens", "%s (id %q): max_tokens and max_completion_tokens must be within 1..%d", where, clip(it.ID), MaxMaxTokens)
	case it.MaxTokens > 0 && it.MaxCompletionTokens > 0:
		return invalid("invalid_max_tokens", "%s (id %q): give max_tokens or max_completion_tokens, not both", where, clip(it.ID))
	case it.Temperature != nil && (*it.Temperature < 0 || *it.Temperature > 2):
		return invalid("invalid_item", "%s (id %q): temperature must be within 0..2", where, clip(it.ID))
	case len(it.Prompt) > MaxPromptBytes || !utf8.ValidString(it.Prompt):
		return invalid("invalid_item", "%s (id %q): prompt must be valid UTF-8 of at most %d bytes", where, clip(it.ID), MaxPromptBytes)
	}
	size := 0
	for i, m := range it.Messages {
		switch m.Role {
		case "system", "user", "assistant", "developer":
		default:
			return invalid("invalid_item", "%s (id %q): messages[%d].role must be system, user, assistant or developer", where, clip(it.ID), i)
		}
		if m.Content == "" || !utf8.ValidString(m.Content) {
			return invalid("invalid_item", "%s (id %q): messages[%d].content must be non-empty UTF-8", where, clip(it.ID), i)
		}
		size += len(m.Content)
	}
	if size > MaxPromptBytes {
		return invalid("invalid_item", "%s (id %q): messages exceed %d bytes", where, clip(it.ID), MaxPromptBytes)
	}
	return nil
}

// lineItem turns a checked item into the writer's item.
func (r *Request) lineItem(tenantID string, it *Item) batchfile.Item {
	// The job's system prompt leads every item that brings none of its own.
	msgs := it.Messages
	if it.Prompt != "" {
		msgs = []batchfile.Message{{Role: "user", Content: it.Prompt}}
	}
	if r.SystemPrompt != "" && msgs[0].Role != "system" && msgs[0].Role != "developer" {
		msgs = append([]batchfile.Message{{Role: defaultSystemLabel, Content: r.SystemPrompt}}, msgs...)
	}
	maxTokens := it.MaxTokens
	if maxTokens == 0 && it.MaxCompletionTokens == 0 {
		maxTokens = r.MaxTokens
	}
	return batchfile.Item{Tenant: tenantID, ItemID: it.ID, Messages: msgs, MaxTokens: maxTokens,
		MaxCompletionTokens: it.MaxCompletionTokens, Temperature: it.Temperature}
}

// checkInputBlob checks that name is a plain blob path inside the tenant's
// own area: "{tenant}/...", no "." or ".." segments, no empty segments, no
// backslashes, no control characters, no percent-escapes.
func checkInputBlob(tenantID, name string) error {
	bad := func(why string) error {
		return invalid("invalid_input_blob", "input_blob: %s; it must be a path under %q in the uploads container", why, tenantID+"/")
	}
	switch {
	case len(name) > MaxInputBlobLen || !utf8.ValidString(name):
		return bad("too long or not UTF-8")
	case !ident.Valid(name) || strings.ContainsAny(name, "\\%?#"):
		return bad("control or format characters, backslashes, '%', '?' or '#'")
	case !strings.HasPrefix(name, tenantID+"/"):
		return bad("outside the tenant's area")
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return bad("empty, '.' or '..' path segments")
		}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Check applies the checks Submit applies to an item, n being its 1-based
// position: what a door validating a whole input up front uses, so that the
// job it submits later is not refused for an item.
func (it *Item) Check(n int) error { return checkItem(it, n) }
