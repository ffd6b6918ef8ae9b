package tenant

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"fmt"
	"io"
	"time"
)

// An API key is "opk_<id>_<secret>": the prefix says what it is (secret
// scanners and people can recognise it), the id (16 characters) names the
// key so that it can be found without a scan, and the secret (52 characters,
// 256 random bits) is what proves possession. Both use lowercase base32, so
// a key never needs escaping and splits unambiguously on "_".
const (
	KeyPrefix      = "opk_"
	keyIDBytes     = 10
	secretBytes    = 32
	keyIDLen       = 16 // base32 of 10 bytes
	secretLen      = 52 // base32 of 32 bytes, unpadded
	saltBytes      = 16
	KeyLen         = len(KeyPrefix) + keyIDLen + 1 + secretLen
	DefaultOverlap = 24 * time.Hour
)

var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Key is a stored API key: never the secret, only a random salt and
// HMAC-SHA256(salt, secret). A salted HMAC of 256 random bits cannot be
// reversed or looked up in a precomputed table, and it costs a microsecond
// to check, so authentication stays fast.
type Key struct {
	ID      string
	Salt    []byte
	Hash    []byte
	Created time.Time
	// Expires is when a rotated-out key stops working; zero: never.
	Expires time.Time
}

// NewKey returns a new API key (the only time the plain key exists: show it
// once) and its stored form. rand is crypto/rand.Reader outside tests.
func NewKey(rand io.Reader, now time.Time) (string, Key, error) {
	buf := make([]byte, keyIDBytes+secretBytes+saltBytes)
	if _, err := io.ReadFull(rand, buf); err != nil {
		return "", Key{}, fmt.Errorf("random key: %w", err)
	}
	id := b32.EncodeToString(buf[:keyIDBytes])
	secret := b32.EncodeToString(buf[keyIDBytes : keyIDBytes+secretBytes])
	salt := buf[keyIDBytes+secretBytes:]
	k := Key{ID: id, Salt: salt, Hash: mac(salt, secret), Created: now.UTC()}
	return KeyPrefix + id + "_" + secret, k, nil
}

// ParseKey splits a presented API key into its id and secret. ok is false
// for anything that is not exactly a key's shape, so that malformed input
// never reaches storage.
func ParseKey(s string) (id, secret string, ok bool) {
	if len(s) != KeyLen || s[:len(KeyPrefix)] != KeyPrefix || s[len(KeyPrefix)+keyIDLen] != '_' {
		return "", "", false
	}
	id, secret = s[len(KeyPrefix):len(KeyPrefix)+keyIDLen], s[len(KeyPrefix)+keyIDLen+1:]
	if !isBase32(id) || !isBase32(secret) {
		return "", "", false
	}
	return id, secret, true
}

// IsKeyID reports whether s has the shape of a key id.
func IsKeyID(s string) bool { return isKeyID(s) }

func isKeyID(s string) bool { return len(s) == keyIDLen && isBase32(s) }

func isBase32(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// Verify reports, in constant time, whether secret is this key's secret.
func (k *Key) Verify(secret string) bool {
	return len(k.Hash) == sha256.Size && subtle.ConstantTimeCompare(mac(k.Salt, secret), k.Hash) == 1
}

// ActiveAt reports whether the key is still valid at now.
func (k *Key) ActiveAt(now time.Time) bool { return k.Expires.IsZero() || now.Before(k.Expires) }

func mac(salt []byte, secret string) []byte {
	h := hmac.New(sha256.New, salt)
	h.Write([]byte(secret))
	return h.Sum(nil)
}

// RotateKey adds a new key and sets every other key to expire after overlap
// (or earlier if it already would), so clients can switch at their own
// pace; overlap zero revokes the other keys at once. Keys already expired
// are dropped. It returns the plain new key: show it once.
func (t *Tenant) RotateKey(rand io.Reader, now time.Time, overlap time.Duration) (string, Key, error) {
	if overlap < 0 {
		return "", Key{}, fmt.Errorf("%w: overlap: must be ≥ 0", ErrInvalid)
	}
	now = now.UTC()
	plain, k, err := NewKey(rand, now)
	if err != nil {
		return "", Key{}, err
	}
	until := now.Add(overlap)
	kept := make([]Key, 0, len(t.Keys)+1)
	for _, old := range t.Keys {
		if overlap == 0 || !old.ActiveAt(now) {
			continue
		}
		if old.Expires.IsZero() || old.Expires.After(until) {
			old.Expires = until
		}
		kept = append(kept, old)
	}
	t.Keys = append(kept, k)
	if len(t.Keys) > MaxKeys {
		return "", Key{}, fmt.Errorf("%w: keys: at most %d overlapping keys; rotate with a shorter overlap or revoke one", ErrInvalid, MaxKeys)
	}
	t.Updated = now
	return plain, k, nil
}

// RevokeKey removes the key with the given id at once.
func (t *Tenant) RevokeKey(id string, now time.Time) error {
	for i, k := range t.Keys {
		if k.ID == id {
			t.Keys = append(t.Keys[:i:i], t.Keys[i+1:]...)
			t.Updated = now.UTC()
			return nil
		}
	}
	return fmt.Errorf("key %q: %w", clip(id), ErrNotFound)
}

// Prune drops keys that have expired by now.
func (t *Tenant) Prune(now time.Time) {
	kept := make([]Key, 0, len(t.Keys))
	for _, k := range t.Keys {
		if k.ActiveAt(now) {
			kept = append(kept, k)
		}
	}
	t.Keys = kept
}

// Credential is what authentication needs to know about one credential (an
// API key, or an Entra application id) without reading the whole tenant:
// whose it is and whether that tenant is active. Key is zero for
// application ids.
type Credential struct {
	TenantID string
	State    State
	Key      Key
}
