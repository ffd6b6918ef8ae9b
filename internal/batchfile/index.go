package batchfile

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
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

// indexLine is the wire form of an entry: one JSON object per line. Strings
// that are not valid UTF-8 (JSON would replace their bad bytes) are written
// base64url-encoded in the _b64 field instead, so they round-trip exactly.
type indexLine struct {
	CustomID  string `json:"custom_id"`
	Tenant    string `json:"tenant,omitempty"`
	TenantB64 string `json:"tenant_b64,omitempty"`
	ItemID    string `json:"item_id,omitempty"`
	ItemIDB64 string `json:"item_id_b64,omitempty"`
}

func encodeIndexLine(e IndexEntry) ([]byte, error) {
	l := indexLine{CustomID: e.CustomID}
	l.Tenant, l.TenantB64 = splitUTF8(e.Tenant)
	l.ItemID, l.ItemIDB64 = splitUTF8(e.ItemID)
	b, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("encode index entry: %w", err)
	}
	return append(b, '\n'), nil
}

func splitUTF8(s string) (plain, b64 string) {
	if utf8.ValidString(s) {
		return s, ""
	}
	return "", base64.RawURLEncoding.EncodeToString([]byte(s))
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

// decodeEntry reads one index line and checks it against its own check.
func decodeEntry(raw []byte) (Ref, IndexEntry, error) {
	var l indexLine
	if err := decode(raw, &l); err != nil {
		return Ref{}, IndexEntry{}, fmt.Errorf("decode: %w", err)
	}
	ref, err := ParseCustomID(l.CustomID)
	if err != nil {
		return Ref{}, IndexEntry{}, err
	}
	e := IndexEntry{CustomID: l.CustomID}
	if e.Tenant, err = joinUTF8(l.Tenant, l.TenantB64); err != nil {
		return Ref{}, IndexEntry{}, fmt.Errorf("tenant: %w", err)
	}
	if e.ItemID, err = joinUTF8(l.ItemID, l.ItemIDB64); err != nil {
		return Ref{}, IndexEntry{}, fmt.Errorf("item_id: %w", err)
	}
	if !ref.Matches(e.Tenant, e.ItemID) {
		return Ref{}, IndexEntry{}, fmt.Errorf("%s: %w", l.CustomID, ErrCheckMismatch)
	}
	return ref, e, nil
}
