package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// SecretPrefix starts every signing secret, as in the Standard Webhooks
// specification; the rest is the key, base64.
const SecretPrefix = "whsec_"

// NewSecret returns a new signing secret: 24 random bytes.
func NewSecret(rnd io.Reader) (string, error) {
	var k [24]byte
	if _, err := io.ReadFull(rnd, k[:]); err != nil {
		return "", fmt.Errorf("webhook secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(k[:]), nil
}

// ErrBadSecret: a secret that is not whsec_ and base64.
var ErrBadSecret = errors.New("webhook secret must be whsec_ followed by base64")

func secretKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, ErrBadSecret
	}
	k, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(k) == 0 {
		return nil, ErrBadSecret
	}
	return k, nil
}

// Sign returns the webhook-signature header value of a message: "v1,"
// and the base64 HMAC-SHA256 of "{id}.{timestamp}.{body}" under the
// secret's key.
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := secretKey(secret)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}
