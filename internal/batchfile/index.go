package batchfile

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/offpath/offpath/internal/jsonstr"
)

// Errors of [IndexReader.Resolve].
var (
	// ErrNotIndexed: the custom_id is well formed but no index entry has its
	// job, part and line.
	ErrNotIndexed = errors.New("custom_id not in index")
	// ErrCheckMismatch: the index entry at the custom_id's position belongs to
	// another tenant or item (a stale or foreign index).
	ErrCheckMismatch = errors.New("custom_id check does not match index entry")
)

// IndexEntry ties one input line to the tenant and the tenant's item.
type IndexEntry struct {
	CustomID string
	Tenant   string
	ItemID   string
}

// A part's index is JSON lines: a header naming the job and the part, then
// one entry per input line, in line order:
//
//	{"job":"j7Hq2-x","part":0}
//	{"tenant":"contoso","item_id":"ticket-1"}
//
// An entry's custom_id is its position (job, part, line) and the check of
// its tenant and item, so it is not written. An index written before the
// header existed has none, and every entry names its custom_id, which the
// reader checks against the entry's position and check. Strings that are
// not valid UTF-8 (JSON would replace their bad bytes) are written
// base64url-encoded in the _b64 field instead, so they round-trip exactly.
type indexHeader struct {
	Job  string `json:"job"`
	Part *int   `json:"part"`
}

type indexLine struct {
	CustomID  string `json:"custom_id"` // only in indexes without a header
	Tenant    string `json:"tenant"`
	TenantB64 string `json:"tenant_b64"`
	ItemID    string `json:"item_id"`
	ItemIDB64 string `json:"item_id_b64"`
}

// appendIndexHeader appends the first line of the index of part of job.
func appendIndexHeader(dst []byte, job string, part int) []byte {
	dst = append(dst, `{"job":`...)
	dst = jsonstr.Append(dst, job)
	dst = append(dst, `,"part":`...)
	dst = strconv.AppendInt(dst, int64(part), 10)
	return append(dst, "}\n"...)
}

// appendIndexLine appends the entry of a line.
func appendIndexLine(dst []byte, tenant, itemID string) []byte {
	dst = append(dst, '{')
	dst = appendUTF8Field(dst, "tenant", tenant)
	dst = append(dst, ',')
	dst = appendUTF8Field(dst, "item_id", itemID)
	return append(dst, "}\n"...)
}

// appendUTF8Field appends "name":s, or "name_b64":base64url(s) when s is
// not valid UTF-8.
func appendUTF8Field(dst []byte, name, s string) []byte {
	dst = append(dst, '"')
	dst = append(dst, name...)
	if utf8.ValidString(s) {
		dst = append(dst, `":`...)
		return jsonstr.Append(dst, s)
	}
	dst = append(dst, `_b64":"`...)
	dst = base64.RawURLEncoding.AppendEncode(dst, []byte(s))
	return append(dst, '"')
}

func joinUTF8(plain, b64 string) (string, error) {
	if b64 == "" {
		return plain, nil
	}
	if plain != "" {
		return "", errors.New("both plain and base64 forms present")
	}
	b, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil {
		return "", fmt.Errorf("decode base64url: %w", err)
	}
	return string(b), nil
}

// maxIndexLine bounds one index line (item ids are bounded by MaxItemIDLen).
const maxIndexLine = 64 << 10

// decodeIndexHeader reads the first line of an index; ok is false when it
// is not a header but the first entry of an index written without one.
func decodeIndexHeader(raw []byte) (job string, part int, ok bool, err error) {
	var h indexHeader
	if err := decode(raw, &h); err != nil {
		return "", 0, false, fmt.Errorf("decode: %w", err)
	}
	if h.Job == "" {
		return "", 0, false, nil
	}
	if h.Part == nil {
		return "", 0, false, errors.New("header without a part")
	}
	return h.Job, *h.Part, true, nil
}

// decodeEntry reads the index entry of line in part of job. The entry's
// custom_id is that position with the check of its tenant and item; an
// entry that names a custom_id (an index without a header) must name
// that one.
func decodeEntry(raw []byte, job string, part, line int) (IndexEntry, error) {
	var l indexLine
	if err := decode(raw, &l); err != nil {
		return IndexEntry{}, fmt.Errorf("decode: %w", err)
	}
	var e IndexEntry
	var err error
	if e.Tenant, err = joinUTF8(l.Tenant, l.TenantB64); err != nil {
		return IndexEntry{}, fmt.Errorf("tenant: %w", err)
	}
	if e.ItemID, err = joinUTF8(l.ItemID, l.ItemIDB64); err != nil {
		return IndexEntry{}, fmt.Errorf("item_id: %w", err)
	}
	e.CustomID = Ref{Job: job, Part: part, Line: line, Check: Check(e.Tenant, e.ItemID)}.String()
	if l.CustomID == "" || l.CustomID == e.CustomID {
		return e, nil
	}
	if ref, err := ParseCustomID(l.CustomID); err == nil && ref.Job == job && ref.Part == part && ref.Line == line {
		return IndexEntry{}, fmt.Errorf("%s: %w", l.CustomID, ErrCheckMismatch)
	}
	return IndexEntry{}, fmt.Errorf("entry of %s, not of line %d of part %d of job %s", l.CustomID, line, part, job)
}
