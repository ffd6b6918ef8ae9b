// Package document is the queue path's record of what became of each
// document dropped into the incoming container: its Status, which the
// enqueue function starts, the process functions move on, and the
// operator CLI reads. A Status always describes one version of one blob
// (its name and ETag), so a redelivered message for a version already
// finished is recognised and does nothing, and a message for a replaced
// version never overwrites what is known about the newer one.
//
// The package is the domain: the standard library, the identifier rule of
// package ident and the token usage of package ledger. Package tablestore
// stores statuses as their JSON (json.go), which the API and the CLI show
// too.
package document

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/ident"
	"github.com/offpath/offpath/internal/ledger"
)

// ErrNotFound: no status for that document.
var ErrNotFound = errors.New("document status not found")

// Errors of a reprocess.
var (
	// ErrNotDeadLettered: only a dead-lettered document is reprocessed.
	ErrNotDeadLettered = errors.New("the document is not dead-lettered")
	// ErrChanged: the dead-lettered version is no longer the blob's
	// (replaced or deleted since): nothing of it is left to reprocess, and
	// a replacement is on its way already.
	ErrChanged = errors.New("the dead-lettered version is no longer in the incoming container")
)

// ErrBadCursor: a page cursor that no listing made.
var ErrBadCursor = errors.New("not a cursor of a document listing")

// State is where a document is in the queue path.
type State string

// The states. Done, Refused, Rejected and DeadLettered are final for their
// version: only a new version of the blob, or an operator's reprocess,
// starts again.
const (
	// Queued: the claim check is on its way to a process function.
	Queued State = "queued"
	// Processing: a process function is working on it.
	Processing State = "processing"
	// Retrying: the last attempt failed for an infrastructure reason (the
	// Reason says which); Service Bus redelivers the message.
	Retrying State = "retrying"
	// DeadLettered: the last delivery Service Bus allows (the queue's
	// MaxDeliveryCount) failed too, so the message went to the dead-letter
	// queue; the Reason is the last failure's. An operator's reprocess
	// puts the document back on the queue path.
	DeadLettered State = "dead_lettered"
	// Done: the result is in the ingested container.
	Done State = "done"
	// Refused: a content filter declined; a result, metered, never retried.
	Refused State = "refused"
	// Rejected: the input can never succeed (the Reason says why).
	Rejected State = "rejected"
)

// Final reports whether s ends the processing of a version.
func (s State) Final() bool {
	return s == Done || s == Refused || s == Rejected || s == DeadLettered
}

// States lists every state, in the order a document meets them.
var States = []State{Queued, Processing, Retrying, Done, Refused, Rejected, DeadLettered}

// ParseState returns the state named s, or an error naming the valid ones.
func ParseState(s string) (State, error) {
	for _, st := range States {
		if string(st) == s {
			return st, nil
		}
	}
	names := make([]string, len(States))
	for i, st := range States {
		names[i] = string(st)
	}
	return "", fmt.Errorf("state %q: want one of %s", Printable(s), strings.Join(names, ", "))
}

// Unattributed is the partition of rejections that name no valid tenant: a
// malformed claim check, a blob outside any tenant folder. Tenant ids start
// with a letter, so it is nobody's.
const Unattributed = "_unattributed"

// Calls is how the model calls of one version went.
type Calls struct {
	// Attempts are all HTTP attempts, the answered requests included;
	// Throttled counts the 429s among them, waited out in process.
	Attempts  int64
	Throttled int64
	// Waited is the time spent between attempts.
	Waited time.Duration
}

// Status is what is known about one document.
type Status struct {
	// Tenant owns the document; Unattributed when none could be named.
	Tenant string `json:"tenant"`
	// Name is the blob's name in the incoming container, tenant folder
	// included ("contoso/reports/q1.txt"), or a quoted form of a name that
	// is not printable UTF-8 (see Printable).
	Name string `json:"name"`
	// BlobURL and ETag identify the version the status is about.
	BlobURL     string `json:"blob_url,omitempty"`
	ETag        string `json:"etag,omitempty"`
	Size        int64  `json:"size"`
	ContentType string `json:"content_type,omitempty"`
	Alias       string `json:"alias,omitempty"`
	// CorrelationID ties the log lines and ledger rows of the document.
	CorrelationID string `json:"correlation_id,omitempty"`
	// CorrelationNote says why CorrelationID was generated when the blob's
	// own correlation id was refused.
	CorrelationNote string `json:"correlation_note,omitempty"`
	// Queue is the Service Bus queue the claim check went to.
	Queue string `json:"queue,omitempty"`

	State State `json:"state"`
	// Reason explains Rejected, Refused, Retrying and DeadLettered (the
	// last failure), without document text.
	Reason string `json:"reason,omitempty"`
	// Deliveries is the Service Bus delivery count of the latest attempt.
	Deliveries int `json:"deliveries,omitempty"`
	// MessageID is the Service Bus message of the latest attempt: of two
	// attempts of one message, the later delivery's status stands.
	MessageID string `json:"message_id,omitempty"`

	Enqueued time.Time `json:"enqueued,omitzero"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	Updated  time.Time `json:"updated,omitzero"`

	// Chunks and TextBytes describe the extracted text; Result is the
	// result blob ("ingested/contoso/reports/q1.txt.jsonl") once written.
	Chunks    int    `json:"chunks,omitempty"`
	TextBytes int64  `json:"text_bytes,omitempty"`
	Result    string `json:"result,omitempty"`
	// Usage is what processing the version cost, as the service reported
	// it (Requests: the model calls answered); Calls is how those calls
	// went. Both travel as one "usage" object (see MarshalJSON).
	Usage ledger.Usage `json:"-"`
	Calls Calls        `json:"-"`

	// Version is the store's concurrency token (an ETag of the row), set
	// when read; empty for a status not read from the store.
	Version string `json:"-"`
}

// Duration is how long the last attempt took, if it finished.
func (s *Status) Duration() time.Duration {
	if s.Started.IsZero() || s.Finished.IsZero() {
		return 0
	}
	return s.Finished.Sub(s.Started)
}

// SameVersion reports whether s describes the blob version etag (quotes
// ignored, as ETags travel both ways).
func (s *Status) SameVersion(etag string) bool {
	return s.ETag != "" && strings.Trim(s.ETag, `"`) == strings.Trim(etag, `"`)
}

// Key is the store's key of a document name: a hash, because names may be
// up to 1,024 bytes of characters a table key cannot hold.
func Key(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "d-" + hex.EncodeToString(sum[:20])
}

// Printable returns name if it follows the identifier rule (valid UTF-8
// without control or format characters), else its Go-quoted form, so a
// hostile name can be stored and shown.
func Printable(name string) string {
	if ident.Valid(name) {
		return name
	}
	return strconv.Quote(name)
}
