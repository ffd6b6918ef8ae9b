package entra

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// ErrInvalidToken: the token is malformed, forged, expired, not yet valid,
// or meant for someone else. Its wrapped reason is safe to log: it never
// contains the token.
var ErrInvalidToken = errors.New("invalid token")

// ErrKeysUnavailable: the signing keys could not be fetched; try again.
var ErrKeysUnavailable = errors.New("signing keys unavailable")

// MaxTokenLen bounds the tokens Verify will look at.
const MaxTokenLen = 16 << 10

// Claims are what offpath uses from a valid token.
type Claims struct {
	// AppID is the application (client) the token was issued to: azp in
	// v2.0 tokens, appid in v1.0 tokens.
	AppID    string
	Issuer   string
	Audience string
	Subject  string
	// TenantID is the Entra directory (tid), not an offpath tenant.
	TenantID string
	Expires  time.Time
}

// KeySet finds a signing key by its key id (the token header's kid).
type KeySet interface {
	Key(ctx context.Context, kid string) (*rsa.PublicKey, error)
}

// Options configure a Verifier.
type Options struct {
	// Issuers are the accepted iss values, e.g.
	// "https://login.microsoftonline.com/<directory id>/v2.0" and
	// "https://sts.windows.net/<directory id>/".
	Issuers []string
	// Audiences are the accepted aud values: offpath's application id URI
	// and/or its client id.
	Audiences []string
	Keys      KeySet
	// Leeway tolerates clock skew on exp and nbf. Default 30 s.
	Leeway time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Verifier validates tokens. It is safe for concurrent use.
type Verifier struct {
	o Options
}

// NewVerifier returns a Verifier, or an error if o is incomplete.
func NewVerifier(o Options) (*Verifier, error) {
	if len(o.Issuers) == 0 || len(o.Audiences) == 0 || o.Keys == nil {
		return nil, errors.New("entra verifier: issuers, audiences and keys are required")
	}
	if o.Leeway == 0 {
		o.Leeway = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Verifier{o: o}, nil
}

type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

type claimsJSON struct {
	Iss   string          `json:"iss"`
	Aud   json.RawMessage `json:"aud"`
	Sub   string          `json:"sub"`
	Tid   string          `json:"tid"`
	Azp   string          `json:"azp"`
	AppID string          `json:"appid"`
	Exp   *json.Number    `json:"exp"`
	Nbf   *json.Number    `json:"nbf"`
}

// Verify checks token and returns its claims, or an error wrapping
// ErrInvalidToken (or ErrKeysUnavailable).
func (v *Verifier) Verify(ctx context.Context, token string) (Claims, error) {
	if len(token) > MaxTokenLen {
		return Claims{}, invalid("longer than %d bytes", MaxTokenLen)
	}
	h64, rest, ok1 := strings.Cut(token, ".")
	c64, s64, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s64, ".") {
		return Claims{}, invalid("not three dot-separated parts")
	}
	var h header
	if err := decodePart(h64, &h); err != nil {
		return Claims{}, invalid("header: %v", err)
	}
	if h.Alg != "RS256" {
		return Claims{}, invalid("alg %q is not RS256", clip(h.Alg))
	}
	if h.Kid == "" {
		return Claims{}, invalid("no kid in header")
	}
	sig, err := base64.RawURLEncoding.DecodeString(s64)
	if err != nil {
		return Claims{}, invalid("signature is not base64url")
	}
	key, err := v.o.Keys.Key(ctx, h.Kid)
	if err != nil {
		return Claims{}, err
	}
	digest := sha256.Sum256([]byte(token[:len(h64)+1+len(c64)]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig); err != nil {
		return Claims{}, invalid("bad signature")
	}

	var c claimsJSON
	if err := decodePart(c64, &c); err != nil {
		return Claims{}, invalid("claims: %v", err)
	}
	now := v.o.Now()
	exp, err := numericDate(c.Exp)
	if err != nil || c.Exp == nil {
		return Claims{}, invalid("exp missing or malformed")
	}
	if !now.Before(exp.Add(v.o.Leeway)) {
		return Claims{}, invalid("expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if c.Nbf != nil {
		nbf, err := numericDate(c.Nbf)
		if err != nil {
			return Claims{}, invalid("nbf malformed")
		}
		if now.Add(v.o.Leeway).Before(nbf) {
			return Claims{}, invalid("not valid before %s", nbf.UTC().Format(time.RFC3339))
		}
	}
	if !slices.Contains(v.o.Issuers, c.Iss) {
		return Claims{}, invalid("issuer %q is not accepted", clip(c.Iss))
	}
	aud, err := audience(c.Aud, v.o.Audiences)
	if err != nil {
		return Claims{}, err
	}
	app := c.Azp
	if app == "" {
		app = c.AppID
	}
	if app == "" {
		return Claims{}, invalid("no azp or appid claim")
	}
	return Claims{AppID: strings.ToLower(app), Issuer: c.Iss, Audience: aud, Subject: c.Sub, TenantID: c.Tid, Expires: exp}, nil
}

func decodePart(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return errors.New("not base64url")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return errors.New("not a JSON object")
	}
	return nil
}

// audience returns the accepted audience among the token's aud (a string
// or an array of strings).
func audience(raw json.RawMessage, accepted []string) (string, error) {
	var list []string
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		list = []string{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return "", invalid("aud missing or malformed")
	}
	for _, a := range list {
		if slices.Contains(accepted, a) {
			return a, nil
		}
	}
	return "", invalid("audience is not accepted")
}

func numericDate(n *json.Number) (time.Time, error) {
	if n == nil {
		return time.Time{}, nil
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || f < 0 || f > 1e11 {
		return time.Time{}, errors.New("not a date")
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidToken, fmt.Sprintf(format, args...))
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
