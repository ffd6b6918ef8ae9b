package batchfile

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Limits of the custom_id scheme (see the package documentation).
const (
	// MaxCustomIDLen is the longest custom_id the scheme produces. Azure
	// documents no maximum; 64 is what OpenAI-compatible tooling assumes.
	MaxCustomIDLen = 64
	// MaxJobIDLen bounds the job id so that every custom_id fits.
	MaxJobIDLen = 32
	// maxIndex bounds part and line indexes (6 digits each).
	maxIndex = 999_999
	// checkLen is the length of the check field.
	checkLen = 8
)

// ErrCustomID reports a custom_id that is not one of ours, or a job id that
// cannot be part of one.
var ErrCustomID = errors.New("invalid custom_id")

// Ref is what a custom_id carries: where the line sits in offpath's job, and
// a check over the tenant and item that the index entry must match.
type Ref struct {
	Job   string
	Part  int
	Line  int
	Check string
}

// NewRef builds the Ref of line in part of job for the tenant's item.
func NewRef(job string, part, line int, tenant, itemID string) (Ref, error) {
	if err := ValidateJobID(job); err != nil {
		return Ref{}, err
	}
	if part < 0 || part > maxIndex || line < 0 || line > maxIndex {
		return Ref{}, fmt.Errorf("%w: part %d or line %d outside [0, %d]", ErrCustomID, part, line, maxIndex)
	}
	return Ref{Job: job, Part: part, Line: line, Check: Check(tenant, itemID)}, nil
}

// ValidateJobID reports whether job can appear in a custom_id.
func ValidateJobID(job string) error {
	if job == "" || len(job) > MaxJobIDLen {
		return fmt.Errorf("%w: job id must be 1 to %d characters", ErrCustomID, MaxJobIDLen)
	}
	for i := 0; i < len(job); i++ {
		if !isJobChar(job[i]) {
			return fmt.Errorf("%w: job id %q: character %q is not in [A-Za-z0-9_-]", ErrCustomID, job, job[i])
		}
	}
	return nil
}

func isJobChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// Check is the check field for a tenant and item id: 48 bits of SHA-256 over
// the tenant's length, the tenant and the item id, base64url without padding.
// The length prefix keeps ("ab","c") and ("a","bc") apart.
func Check(tenant, itemID string) string {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(tenant)))
	h.Write(n[:])
	h.Write([]byte(tenant))
	h.Write([]byte(itemID))
	var sum [sha256.Size]byte
	return base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0])[:6])
}

// String encodes r as a custom_id: "{job}.{part}.{line}.{check}".
func (r Ref) String() string {
	return r.Job + "." + strconv.Itoa(r.Part) + "." + strconv.Itoa(r.Line) + "." + r.Check
}

// Matches reports whether tenant and itemID are the ones r was made for.
func (r Ref) Matches(tenant, itemID string) bool {
	return r.Check == Check(tenant, itemID)
}

// ParseCustomID decodes a custom_id made by [Ref.String]. It accepts exactly
// the strings String produces: no leading zeros, no signs, no extra fields.
func ParseCustomID(s string) (Ref, error) {
	if len(s) > MaxCustomIDLen {
		return Ref{}, fmt.Errorf("%w: longer than %d characters", ErrCustomID, MaxCustomIDLen)
	}
	fields := strings.Split(s, ".")
	if len(fields) != 4 {
		return Ref{}, fmt.Errorf("%w: %q does not have 4 dot-separated fields", ErrCustomID, s)
	}
	job, partS, lineS, check := fields[0], fields[1], fields[2], fields[3]
	if err := ValidateJobID(job); err != nil {
		return Ref{}, err
	}
	part, err := parseIndex(partS)
	if err != nil {
		return Ref{}, fmt.Errorf("%w: part: %w", ErrCustomID, err)
	}
	line, err := parseIndex(lineS)
	if err != nil {
		return Ref{}, fmt.Errorf("%w: line: %w", ErrCustomID, err)
	}
	if len(check) != checkLen {
		return Ref{}, fmt.Errorf("%w: check %q is not %d characters", ErrCustomID, check, checkLen)
	}
	if _, err := base64.RawURLEncoding.Strict().DecodeString(check); err != nil {
		return Ref{}, fmt.Errorf("%w: check %q is not base64url", ErrCustomID, check)
	}
	return Ref{Job: job, Part: part, Line: line, Check: check}, nil
}

// parseIndex reads a canonical non-negative decimal of at most 6 digits.
func parseIndex(s string) (int, error) {
	if s == "" || len(s) > 6 || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("%q is not a canonical index", s)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a canonical index", s)
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, nil
}
