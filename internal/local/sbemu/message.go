package sbemu

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
)

// Message is what a sender sets on a Service Bus message.
type Message struct {
	Body []byte
	// MessageID is generated (32 hex digits) when empty; at most 128 characters.
	MessageID     string
	CorrelationID string
	ContentType   string
	Subject       string
	// ApplicationProperties values must be strings, bools, nil or numbers.
	// They come back with their JSON types: string, bool, nil, int64 for
	// integers and float64 for other numbers.
	ApplicationProperties map[string]any
}

// Delivery is a received (locked) message, or a peeked dead-letter.
type Delivery struct {
	Message
	// Queue is the Service Bus path the message was received from, e.g.
	// "doc-ingest" or "doc-ingest/$DeadLetterQueue".
	Queue string
	// DeliveryCount is 1 on the first delivery. On a dead-lettered message it
	// counts the deliveries before and after dead-lettering.
	DeliveryCount  int
	SequenceNumber int64
	EnqueuedTime   time.Time
	ExpiresAt      time.Time
	// LockToken identifies this delivery; it changes on every delivery.
	LockToken string

	// Set on dead-lettered messages. DeadLetterSource is the queue the
	// message was dead-lettered from; Service Bus itself sets it only on
	// dead letters auto-forwarded to another entity, so a dev host imitating
	// the trigger on a dead-letter queue should not pass it on.
	DeadLetterReason           string
	DeadLetterErrorDescription string
	DeadLetterSource           string

	lock *lockState // nil for peeked messages
}

// LockedUntil returns when the lock of this delivery ends unless renewed. It
// is the zero time for a peeked message.
func (d *Delivery) LockedUntil() time.Time {
	if d.lock == nil {
		return time.Time{}
	}
	d.lock.mu.Lock()
	defer d.lock.mu.Unlock()
	return d.lock.until
}

// settled reports whether d was completed, abandoned or dead-lettered.
func (d *Delivery) settled() bool {
	if d.lock == nil {
		return false
	}
	d.lock.mu.Lock()
	defer d.lock.mu.Unlock()
	return d.lock.settled
}

// lockState is the storage side of a delivery. Its mutex is held for the
// whole of a settle or renew call, so that each call uses the latest pop
// receipt.
type lockState struct {
	entity    entity
	storageID string
	text      string // the storage message, resent on every visibility update
	dequeues  int    // the storage DequeueCount at receipt
	wire      wire   // text, decoded; zero for an undecodable message

	mu         sync.Mutex
	popReceipt string
	until      time.Time // estimated from the local clock before the request
	settled    bool
}

// envelope is the stored form of a message.
type envelope struct {
	Body                  []byte         `json:"body"`
	MessageID             string         `json:"messageId"`
	CorrelationID         string         `json:"correlationId,omitempty"`
	ContentType           string         `json:"contentType,omitempty"`
	Subject               string         `json:"subject,omitempty"`
	ApplicationProperties map[string]any `json:"applicationProperties,omitempty"`
	EnqueuedTime          time.Time      `json:"enqueuedTime"`
	ExpiresAt             time.Time      `json:"expiresAt"`
	SequenceNumber        int64          `json:"sequenceNumber"`
}

// deadLetter is what dead-lettering adds to a message.
type deadLetter struct {
	Reason        string    `json:"reason"`
	Description   string    `json:"description,omitempty"`
	Source        string    `json:"source"`
	DeliveryCount int       `json:"deliveryCount"`
	Time          time.Time `json:"time"`
}

// wireVersion tags the storage messages sbemu writes.
const wireVersion = 1

// wire is the text of a storage message: the envelope inline or the name of
// the blob that holds it, plus the dead-letter record on a DLQ entry.
type wire struct {
	Version    int         `json:"sbemu"`
	Message    *envelope   `json:"message,omitempty"`
	Blob       string      `json:"blob,omitempty"`
	DeadLetter *deadLetter `json:"deadLetter,omitempty"`
}

// marshalText encodes v as JSON that survives the queue's XML transport:
// U+FFFE and U+FFFF, legal in JSON strings but not in XML, are escaped (they
// can only occur inside strings).
func marshalText(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if !bytes.ContainsAny(b, "\uFFFE\uFFFF") {
		return b, nil
	}
	b = bytes.ReplaceAll(b, []byte("\uFFFE"), []byte(`\ufffe`))
	return bytes.ReplaceAll(b, []byte("\uFFFF"), []byte(`\uffff`)), nil
}

// unmarshalNumbers decodes JSON keeping integers exact (see normalize).
func unmarshalNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// decodeWire parses a storage message written by sbemu.
func decodeWire(text string) (wire, error) {
	var w wire
	if err := unmarshalNumbers([]byte(text), &w); err != nil {
		return wire{}, fmt.Errorf("not sbemu JSON: %w", err)
	}
	switch {
	case w.Version != wireVersion:
		return wire{}, fmt.Errorf("unknown sbemu version %d", w.Version)
	case (w.Message == nil) == (w.Blob == ""):
		return wire{}, errors.New("neither a message nor a blob reference")
	}
	if w.Message != nil {
		normalize(w.Message.ApplicationProperties)
	}
	return w, nil
}

// decodeEnvelope parses an envelope stored in a blob.
func decodeEnvelope(data []byte) (*envelope, error) {
	var env envelope
	if err := unmarshalNumbers(data, &env); err != nil {
		return nil, err
	}
	normalize(env.ApplicationProperties)
	return &env, nil
}

// normalize turns json.Number property values into int64 or float64.
func normalize(props map[string]any) {
	for k, v := range props {
		n, ok := v.(json.Number)
		if !ok {
			continue
		}
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			props[k] = i
		} else if f, err := strconv.ParseFloat(string(n), 64); err == nil {
			props[k] = f
		}
	}
}

// checkProperty validates one application property value and returns its
// size as counted toward the limits.
func checkProperty(key string, v any) (int, error) {
	size := len(key)
	switch v := v.(type) {
	case nil:
	case string:
		size += len(v)
	case bool:
		size++
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, json.Number:
		size += 8
	case float32:
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return 0, fmt.Errorf("%w: application property %q is %v, which JSON cannot carry", ErrInvalidMessage, key, v)
		}
		size += 8
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("%w: application property %q is %v, which JSON cannot carry", ErrInvalidMessage, key, v)
		}
		size += 8
	default:
		return 0, fmt.Errorf("%w: application property %q has type %T: use a string, number, bool or nil", ErrInvalidMessage, key, v)
	}
	return size, nil
}

// delivery builds the public view of a decoded message.
func delivery(env *envelope, dl *deadLetter, path string, count int) *Delivery {
	d := &Delivery{
		Message: Message{
			Body:                  env.Body,
			MessageID:             env.MessageID,
			CorrelationID:         env.CorrelationID,
			ContentType:           env.ContentType,
			Subject:               env.Subject,
			ApplicationProperties: env.ApplicationProperties,
		},
		Queue:          path,
		DeliveryCount:  count,
		SequenceNumber: env.SequenceNumber,
		EnqueuedTime:   env.EnqueuedTime,
		ExpiresAt:      env.ExpiresAt,
	}
	if dl != nil {
		d.DeliveryCount += dl.DeliveryCount
		d.DeadLetterReason = dl.Reason
		d.DeadLetterErrorDescription = dl.Description
		d.DeadLetterSource = dl.Source
	}
	return d
}
