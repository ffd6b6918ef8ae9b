package claimcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/offpath/offpath/internal/outcome"
)

// Version is the message format this package writes and reads.
const Version = 1

// Service Bus limits (Standard tier) that bound a message, and ours.
const (
	// ServiceBusMaxMessageBytes is Service Bus Standard's message size limit,
	// payload and properties together. An oversized send fails rather than
	// being truncated.
	ServiceBusMaxMessageBytes = 256 * 1024
	// ServiceBusMaxHeaderBytes is the limit of all properties of a message.
	ServiceBusMaxHeaderBytes = 64 * 1024
	// MaxEncodedBytes bounds an encoded claim check: 5 KiB, a fiftieth of
	// what Service Bus takes. The largest message Validate accepts (a
	// 1,024-byte name percent-escaped to 3,072 bytes, a 256-byte account URL,
	// a correlation id of 128 characters that JSON escapes to six bytes each,
	// and every other field at its limit) encodes to 4,459 bytes, so the
	// bound never refuses a valid message; a test keeps it that way.
	MaxEncodedBytes = 5 * 1024
)

// Message is a claim check: a reference to a document in blob storage and
// the context to process it. It never contains the document.
type Message struct {
	// Version is the format version; Encode sets it to Version.
	Version int `json:"version"`
	// BlobURL is the blob's URL: the account URL, the incoming container,
	// then the name with each segment percent-escaped and slashes kept (the
	// shape the Functions host's Uri has). No query: workers authenticate
	// with their managed identity, so a SAS never travels in a message.
	BlobURL string `json:"blob_url"`
	// ETag is the version of the blob the message is for, bare or quoted.
	// The worker reads the blob with If-Match so a replaced blob is noticed.
	ETag string `json:"etag"`
	// Size is the blob's length in bytes, at least 1.
	Size int64 `json:"size"`
	// ContentType is the blob's Content-Type, if it has one.
	ContentType string `json:"content_type,omitempty"`
	// Tenant owns the document and pays for its tokens.
	Tenant string `json:"tenant"`
	// ModelAlias names the models to use; the worker resolves it to
	// deployments.
	ModelAlias string `json:"model_alias"`
	// CorrelationID ties the enqueue, the processing and the ledger rows of
	// one document together in logs: text, see ValidCorrelationID.
	CorrelationID string `json:"correlation_id"`
}

// fieldNames are the JSON keys of Message, exactly as they must be spelt.
func fieldNames() []string {
	return []string{"version", "blob_url", "etag", "size", "content_type", "tenant", "model_alias", "correlation_id"}
}

// Encode validates m, sets its version and returns its JSON encoding. A
// message that does not validate or that encodes to more than
// MaxEncodedBytes is an outcome.Reject.
func (r *Rules) Encode(m Message) ([]byte, error) {
	m.Version = Version
	if err := r.Validate(m); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("encode claim check: %w", err)
	}
	data := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(data) > MaxEncodedBytes {
		return nil, outcome.Reject("claim check too large", fmt.Errorf("encoded size %d exceeds %d bytes", len(data), MaxEncodedBytes))
	}
	return data, nil
}

// Decode parses and validates a claim check strictly. Anything it refuses is
// an outcome.Reject: the message can never be processed.
func (r *Rules) Decode(data []byte) (Message, error) {
	if len(data) > MaxEncodedBytes {
		return Message{}, outcome.Reject("malformed claim check", fmt.Errorf("%d bytes exceeds the limit of %d", len(data), MaxEncodedBytes))
	}
	if err := checkShape(data); err != nil {
		return Message{}, outcome.Reject("malformed claim check", err)
	}
	var m Message
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Message{}, outcome.Reject("malformed claim check", fmt.Errorf("decode: %w", err))
	}
	if m.Version != Version {
		return Message{}, outcome.Reject("unsupported claim check version", fmt.Errorf("version %d, want %d", m.Version, Version))
	}
	if err := r.Validate(m); err != nil {
		return Message{}, err
	}
	return m, nil
}

// checkShape requires one JSON object of scalar values whose keys are
// Message's, each at most once and spelt exactly (encoding/json would match
// "Tenant" to "tenant" and let a second "tenant" win), and nothing after it.
func checkShape(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("not a JSON object")
	}
	known := fieldNames()
	seen := make(map[string]bool, len(known))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("read key: %w", err)
		}
		key, _ := tok.(string)
		switch {
		case !slices.Contains(known, key):
			return fmt.Errorf("unknown field %q", key)
		case seen[key]:
			return fmt.Errorf("duplicate field %q", key)
		}
		seen[key] = true
		val, err := dec.Token()
		if err != nil {
			return fmt.Errorf("read %s: %w", key, err)
		}
		if _, ok := val.(json.Delim); ok {
			return fmt.Errorf("field %q: not a scalar", key)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return fmt.Errorf("read: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the object")
	}
	return nil
}
