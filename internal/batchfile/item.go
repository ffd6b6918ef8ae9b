package batchfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// MaxItemIDLen bounds a tenant's item id (bytes). Item ids never enter the
// custom_id, only the index, so the bound is about keeping index lines small.
const MaxItemIDLen = 4096

// ErrInvalidItem reports an item that can never be submitted (the caller
// rejects it and goes on; the writer's state is unchanged).
var ErrInvalidItem = errors.New("invalid batch item")

// Item is one request of a tenant: a chat completion to run in a batch.
type Item struct {
	// Tenant owns the item and its usage. Required.
	Tenant string
	// ItemID is the tenant's own id for the item, returned with its result.
	// Any bytes, up to MaxItemIDLen.
	ItemID string
	// Messages is the conversation; at least one. Content must be valid UTF-8
	// (JSON would silently replace invalid bytes).
	Messages []Message
	// MaxTokens, when positive, is sent as max_tokens.
	MaxTokens int
	// MaxCompletionTokens, when positive, is sent as max_completion_tokens
	// (required instead of max_tokens by reasoning models).
	MaxCompletionTokens int
	// Temperature is sent when not nil.
	Temperature *float64
	// Extra holds further body fields (response_format, seed, top_p, ...), each
	// a JSON value. The fields the writer sets itself are refused.
	Extra map[string]json.RawMessage
}

// Message is one chat message with text content.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// reservedFields are set by the writer; Extra may not override them.
var reservedFields = []string{"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "stream", "n"}

func (it *Item) validate() error {
	switch {
	case it.Tenant == "":
		return fmt.Errorf("%w: tenant is required", ErrInvalidItem)
	case !utf8.ValidString(it.Tenant):
		return fmt.Errorf("%w: tenant is not valid UTF-8", ErrInvalidItem)
	case len(it.ItemID) > MaxItemIDLen:
		return fmt.Errorf("%w: item id of %d bytes exceeds %d", ErrInvalidItem, len(it.ItemID), MaxItemIDLen)
	case len(it.Messages) == 0:
		return fmt.Errorf("%w: no messages", ErrInvalidItem)
	case it.MaxTokens < 0 || it.MaxCompletionTokens < 0:
		return fmt.Errorf("%w: negative token limit", ErrInvalidItem)
	}
	for i, m := range it.Messages {
		if m.Role == "" {
			return fmt.Errorf("%w: message %d has no role", ErrInvalidItem, i)
		}
		if !utf8.ValidString(m.Role) || !utf8.ValidString(m.Content) {
			return fmt.Errorf("%w: message %d is not valid UTF-8", ErrInvalidItem, i)
		}
	}
	for k, v := range it.Extra {
		if slices.Contains(reservedFields, k) {
			return fmt.Errorf("%w: extra field %q is set by the writer", ErrInvalidItem, k)
		}
		if !utf8.ValidString(k) || !json.Valid(v) {
			return fmt.Errorf("%w: extra field %q is not valid JSON", ErrInvalidItem, k)
		}
	}
	return nil
}

// requestLine is one line of an input file. Body is a plainBody, or a
// requestBody when there are extra fields: encoding/json re-scans a
// Marshaler's output, which costs as much again as the encoding.
type requestLine struct {
	CustomID string `json:"custom_id"`
	Method   string `json:"method"`
	URL      string `json:"url"`
	Body     any    `json:"body"`
}

type plainBody struct {
	Model               string    `json:"model"`
	Messages            []Message `json:"messages"`
	MaxTokens           int       `json:"max_tokens,omitempty"`
	MaxCompletionTokens int       `json:"max_completion_tokens,omitempty"`
	Temperature         *float64  `json:"temperature,omitempty"`
}

type requestBody struct {
	plainBody
	extra map[string]json.RawMessage
}

// MarshalJSON writes the fixed fields, then the extra fields in key order,
// so that the same item always gives the same bytes.
func (b requestBody) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the outer encoder would not undo escaping
	if err := enc.Encode(b.plainBody); err != nil {
		return nil, err
	}
	buf.Truncate(buf.Len() - 2) // drop "}\n"
	if len(b.extra) == 0 {
		buf.WriteByte('}')
		return buf.Bytes(), nil
	}
	keys := make([]string, 0, len(b.extra))
	for k := range b.extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		buf.WriteByte(',')
		buf.Write(key)
		buf.WriteByte(':')
		if err := json.Compact(&buf, b.extra[k]); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// encodeLine appends the request line of it (with its trailing "\n") to buf.
func encodeLine(buf *bytes.Buffer, customID, url, deployment string, it *Item) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	body := plainBody{Model: deployment, Messages: it.Messages, MaxTokens: it.MaxTokens,
		MaxCompletionTokens: it.MaxCompletionTokens, Temperature: it.Temperature}
	line := requestLine{CustomID: customID, Method: "POST", URL: url, Body: body}
	if len(it.Extra) > 0 {
		line.Body = requestBody{plainBody: body, extra: it.Extra}
	}
	if err := enc.Encode(line); err != nil {
		return fmt.Errorf("%w: encode: %w", ErrInvalidItem, err)
	}
	return nil
}
