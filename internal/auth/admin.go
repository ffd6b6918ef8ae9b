package auth

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

// AdminKeyPrefix starts every admin key: "opa_" and 52 base32 characters
// (256 random bits).
const AdminKeyPrefix = "opa_"

const adminSecretBytes = 32

var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewAdminKey returns a new admin key and the hex SHA-256 digest to put in
// the app setting (the setting holds only the digest).
func NewAdminKey(rand io.Reader) (key, digest string, err error) {
	b := make([]byte, adminSecretBytes)
	if _, err := io.ReadFull(rand, b); err != nil {
		return "", "", fmt.Errorf("random admin key: %w", err)
	}
	key = AdminKeyPrefix + b32.EncodeToString(b)
	return key, AdminKeyDigest(key), nil
}

// AdminKeyDigest returns the hex SHA-256 digest of an admin key, the form
// OFFPATH_ADMIN_KEY_SHA256 holds.
func AdminKeyDigest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// IsAdminKey reports whether s has the shape of an admin key.
func IsAdminKey(s string) bool { return validAdminKey(s) }

func validAdminKey(key string) bool {
	s, ok := strings.CutPrefix(key, AdminKeyPrefix)
	if !ok || len(s) != 52 {
		return false
	}
	_, err := b32.DecodeString(s)
	return err == nil
}

// ParseAdminKeyHashes parses a comma-separated list of hex SHA-256 digests
// (as NewAdminKey returns them). Empty input is no admin key.
func ParseAdminKeyHashes(s string) ([][sha256.Size]byte, error) {
	var out [][sha256.Size]byte
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		b, err := hex.DecodeString(part)
		if err != nil || len(b) != sha256.Size {
			if strings.HasPrefix(part, AdminKeyPrefix) {
				return nil, fmt.Errorf("entry %d is an admin key, not its SHA-256 digest: store only the digest (offpath admin-key prints it)", i)
			}
			return nil, fmt.Errorf("entry %d is not a hex SHA-256 digest (64 hex characters)", i)
		}
		out = append(out, [sha256.Size]byte(b))
	}
	if len(out) == 0 && strings.TrimSpace(s) != "" {
		return nil, errors.New("no digests in the list")
	}
	return out, nil
}
