package batchfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/offpath/offpath/internal/jsonstr"
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

// appendLine appends the request line of it, with its trailing "\n", to
// dst: the fixed fields in a fixed order, then the extra fields in key
// order, so that the same item always gives the same bytes. Strings are
// written as encoding/json writes them with HTML escaping off, numbers as
// it does; built by hand, as the writer's hot path, instead of through
// encoding/json's reflection.
func appendLine(dst []byte, customID, url, deployment string, it *Item) ([]byte, error) {
	dst = append(dst, `{"custom_id":`...)
	dst = jsonstr.Append(dst, customID)
	dst = append(dst, `,"method":"POST","url":`...)
	dst = jsonstr.Append(dst, url)
	dst = append(dst, `,"body":{"model":`...)
	dst = jsonstr.Append(dst, deployment)
	dst = append(dst, `,"messages":[`...)
	for i, m := range it.Messages {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"role":`...)
		dst = jsonstr.Append(dst, m.Role)
		dst = append(dst, `,"content":`...)
		dst = jsonstr.Append(dst, m.Content)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if it.MaxTokens != 0 {
		dst = append(dst, `,"max_tokens":`...)
		dst = strconv.AppendInt(dst, int64(it.MaxTokens), 10)
	}
	if it.MaxCompletionTokens != 0 {
		dst = append(dst, `,"max_completion_tokens":`...)
		dst = strconv.AppendInt(dst, int64(it.MaxCompletionTokens), 10)
	}
	if it.Temperature != nil {
		t, err := json.Marshal(*it.Temperature)
		if err != nil {
			return dst, fmt.Errorf("%w: temperature: %w", ErrInvalidItem, err)
		}
		dst = append(append(dst, `,"temperature":`...), t...)
	}
	if len(it.Extra) > 0 {
		keys := make([]string, 0, len(it.Extra))
		for k := range it.Extra {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf := bytes.NewBuffer(dst)
		for _, k := range keys {
			buf.WriteByte(',')
			buf.Write(jsonstr.Append(buf.AvailableBuffer(), k))
			buf.WriteByte(':')
			if err := json.Compact(buf, it.Extra[k]); err != nil {
				return buf.Bytes(), fmt.Errorf("%w: extra field %q: %w", ErrInvalidItem, k, err)
			}
		}
		dst = buf.Bytes()
	}
	return append(dst, "}}\n"...), nil
}
