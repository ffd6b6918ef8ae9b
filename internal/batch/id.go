package batch

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"time"
)

// idAlphabet is base32hex in lower case: its characters sort in the order
// of their values, so ids sort like the numbers they encode.
const idAlphabet = "0123456789abcdefghijklmnopqrstuv"

// JobIDLen is the length of every job id.
const JobIDLen = 15

// NewJobID returns a job id: 9 characters of (2^45 − 1 − unix milliseconds),
// so that a newer job sorts first in a tenant's listing, then 6 random
// characters (30 bits). Ids are short, URL-safe, valid Table Storage keys
// and valid in batchfile's custom_ids.
func NewJobID(now time.Time, rnd io.Reader) (string, error) {
	var b [JobIDLen]byte
	inv := uint64(1)<<45 - 1 - uint64(now.UnixMilli())&(1<<45-1)
	for i := 8; i >= 0; i-- {
		b[i] = idAlphabet[inv&31]
		inv >>= 5
	}
	var r [8]byte
	if _, err := io.ReadFull(rnd, r[:]); err != nil {
		return "", fmt.Errorf("job id: %w", err)
	}
	x := binary.BigEndian.Uint64(r[:])
	for i := 9; i < JobIDLen; i++ {
		b[i] = idAlphabet[x&31]
		x >>= 5
	}
	return string(b[:]), nil
}

// ValidJobID reports whether s has the shape of a job id; anything else
// is never looked up.
func ValidJobID(s string) bool {
	if len(s) != JobIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'v') {
			return false
		}
	}
	return true
}

// jobIDTime is the creation time, to the millisecond, that a valid job id
// encodes.
func jobIDTime(id string) time.Time {
	var inv uint64
	for i := 0; i < 9; i++ {
		inv = inv<<5 | uint64(strings.IndexByte(idAlphabet, id[i]))
	}
	return time.UnixMilli(int64(1<<45 - 1 - inv))
}
