package batchfile

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/offpath/offpath/internal/lines"
)

// Errors of [Index.Resolve].
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

type position struct{ part, line int }

// Index maps the custom_ids of one job back to tenants and items. Load one
// index file per part; Resolve verifies every lookup against the check.
type Index struct {
	job     string
	entries map[position]IndexEntry
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{entries: make(map[position]IndexEntry)}
}

// Len is the number of entries loaded.
func (x *Index) Len() int { return len(x.entries) }

// Load reads an index file written by [Writer]. Every entry must belong to
// the same job as those already loaded and must match its own check.
func (x *Index) Load(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for n := 1; ; n++ {
		var err error
		buf, err = lines.Read(br, buf, maxIndexLine)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("index line %d: %w", n, err)
		}
		if err := x.add(buf); err != nil {
			return fmt.Errorf("index line %d: %w", n, err)
		}
	}
}

// maxIndexLine bounds one index line (item ids are bounded by MaxItemIDLen).
const maxIndexLine = 64 << 10

func (x *Index) add(raw []byte) error {
	ref, e, err := decodeEntry(raw)
	if err != nil {
		return err
	}
	if x.job == "" {
		x.job = ref.Job
	} else if ref.Job != x.job {
		return fmt.Errorf("entry of job %q in an index of job %q", ref.Job, x.job)
	}
	pos := position{ref.Part, ref.Line}
	if _, dup := x.entries[pos]; dup {
		return fmt.Errorf("duplicate entry for %s", e.CustomID)
	}
	x.entries[pos] = e
	return nil
}

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

// Resolve returns the entry of a custom_id found in an output or error file.
func (x *Index) Resolve(customID string) (IndexEntry, error) {
	ref, err := ParseCustomID(customID)
	if err != nil {
		return IndexEntry{}, err
	}
	e, ok := x.entries[position{ref.Part, ref.Line}]
	if !ok || ref.Job != x.job {
		return IndexEntry{}, fmt.Errorf("%s: %w", customID, ErrNotIndexed)
	}
	if e.CustomID != customID {
		return IndexEntry{}, fmt.Errorf("%s: %w", customID, ErrCheckMismatch)
	}
	return e, nil
}

// Lookup returns the entry of a line of a part, for walking a part's lines
// in order (e.g. to account for those no output file mentions).
func (x *Index) Lookup(part, line int) (IndexEntry, bool) {
	e, ok := x.entries[position{part, line}]
	return e, ok
}
