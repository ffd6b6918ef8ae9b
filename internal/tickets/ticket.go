package tickets

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The schema's limits (see the package documentation).
const (
	MaxIDBytes       = 128
	MaxSubjectBytes  = 1 << 10
	MaxCustomerBytes = 256
	MaxBodyBytes     = 256 << 10
	MaxDocumentBytes = 8 << 20
)

// Ticket is one valid ticket.
type Ticket struct {
	ID       string
	Subject  string
	Body     string
	Customer string
	// Created is the zero time when the document has no created_at.
	Created time.Time
	// Extra holds the fields the schema does not know, as they were written.
	Extra map[string]json.RawMessage
	// Hash is Hash(Subject, Body), the key for "summarised already".
	Hash string
	// Blob and Line say where the ticket was read (Line is 0 for a .json file).
	Blob string
	Line int
}

// Hash returns the hex SHA-256 digest of a ticket's subject and body, each
// length-prefixed so that moving text from one to the other changes it, with a
// version tag so that a future change of what counts can never compare equal
// to an old record.
func Hash(subject, body string) string {
	h := sha256.New()
	var n [8]byte
	h.Write([]byte("offpath ticket v1\x00"))
	binary.BigEndian.PutUint64(n[:], uint64(len(subject)))
	h.Write(n[:])
	h.Write([]byte(subject))
	binary.BigEndian.PutUint64(n[:], uint64(len(body)))
	h.Write(n[:])
	h.Write([]byte(body))
	return hex.EncodeToString(h.Sum(nil))
}

// MarshalJSON writes the ticket in the documented schema, unknown fields
// included, so that a copy of it reads back as the same ticket. Where it was
// read and its hash are not part of the document.
func (t Ticket) MarshalJSON() ([]byte, error) {
	doc := make(map[string]any, len(t.Extra)+5)
	for k, v := range t.Extra {
		doc[k] = v
	}
	doc["id"] = t.ID
	doc["body"] = t.Body
	if t.Subject != "" {
		doc["subject"] = t.Subject
	}
	if t.Customer != "" {
		doc["customer"] = t.Customer
	}
	if !t.Created.IsZero() {
		doc["created_at"] = t.Created.Format(time.RFC3339Nano)
	}
	return json.Marshal(doc)
}

// bom is the UTF-8 byte-order mark some Windows exporters put first.
var bom = []byte{0xEF, 0xBB, 0xBF}

// parse validates one document. On failure it returns the id when it was
// valid (for the report) and a reason that never quotes ticket text.
func parse(doc []byte) (t Ticket, id, reason string) {
	doc = bytes.TrimPrefix(doc, bom)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc, &fields); err != nil {
		return Ticket{}, "", jsonReason(err)
	}
	if fields == nil {
		return Ticket{}, "", "not a JSON object"
	}
	idRaw, ok := take(fields, "id")
	if !ok {
		return Ticket{}, "", "missing id"
	}
	if err := json.Unmarshal(idRaw, &t.ID); err != nil {
		return Ticket{}, "", "id is not a string"
	}
	if !validID(t.ID) {
		return Ticket{}, "", fmt.Sprintf("invalid id (want 1–%d bytes of A-Z a-z 0-9 . _ -, starting with a letter or digit)", MaxIDBytes)
	}
	id = t.ID
	bodyRaw, ok := take(fields, "body")
	if !ok {
		return Ticket{}, id, "missing body"
	}
	if len(bodyRaw) > 6*MaxBodyBytes+2 { // cannot unescape to within the limit
		return Ticket{}, id, fmt.Sprintf("body too large (%s of JSON; limit %s)", size(len(bodyRaw)), size(MaxBodyBytes))
	}
	if err := json.Unmarshal(bodyRaw, &t.Body); err != nil {
		return Ticket{}, id, "body is not a string"
	}
	if len(t.Body) > MaxBodyBytes {
		return Ticket{}, id, fmt.Sprintf("body too large (%s; limit %s)", size(len(t.Body)), size(MaxBodyBytes))
	}
	if strings.TrimSpace(t.Body) == "" {
		return Ticket{}, id, "blank body"
	}
	if reason := optString(fields, "subject", MaxSubjectBytes, &t.Subject); reason != "" {
		return Ticket{}, id, reason
	}
	if reason := optString(fields, "customer", MaxCustomerBytes, &t.Customer); reason != "" {
		return Ticket{}, id, reason
	}
	var created string
	if reason := optString(fields, "created_at", 64, &created); reason != "" {
		return Ticket{}, id, reason
	}
	if created != "" {
		c, err := time.Parse(time.RFC3339Nano, created)
		if err != nil {
			return Ticket{}, id, "created_at is not an RFC 3339 time"
		}
		t.Created = c
	}
	if len(fields) > 0 {
		t.Extra = fields
	}
	t.Hash = Hash(t.Subject, t.Body)
	return t, id, ""
}

// take removes name from fields and reports whether it held a non-null value.
func take(fields map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	raw, ok := fields[name]
	delete(fields, name)
	if !ok || string(raw) == "null" {
		return nil, false
	}
	return raw, true
}

// optString decodes an optional string field of at most limit bytes.
func optString(fields map[string]json.RawMessage, name string, limit int, dst *string) string {
	raw, ok := take(fields, name)
	if !ok {
		return ""
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return name + " is not a string"
	}
	if len(*dst) > limit {
		return fmt.Sprintf("%s too long (%s; limit %s)", name, size(len(*dst)), size(limit))
	}
	return ""
}

// jsonReason describes a decoding error without quoting the input.
func jsonReason(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("malformed JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		return "not a JSON object"
	default:
		return "malformed JSON"
	}
}

// validID reports whether id follows the schema's id format.
func validID(id string) bool {
	if id == "" || len(id) > MaxIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// size formats a byte count for a reader of the report: "800 bytes",
// "256 KiB", "5.0 MiB".
func size(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		if n%(1<<10) == 0 {
			return fmt.Sprintf("%d KiB", n>>10)
		}
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}
