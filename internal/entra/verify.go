package entra

import (
	"bytes"
	"cmp"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
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
	// IDType is idtyp ("app" or "user"), an optional claim the application
	// registration may ask for; Scope is scp, present in delegated tokens
	// only; Roles are the app roles granted.
	IDType string
	Scope  string
	Roles  []string
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
	// AppOnly accepts application tokens only (the client credentials
	// flow): a token with scp, or idtyp "user", is refused, and the token
	// must carry one of Roles in roles, or idtyp "app" when Roles is empty.
	// Without it a client application's delegated token (a user signed in
	// to it) counts as the application.
	AppOnly bool
	// Roles are the app roles that admit an application token (any one).
	Roles []string
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
	h, err := decodePart(h64)
	if err != nil {
		return Claims{}, invalid("header: %v", err)
	}
	alg, err := h.str("alg")
	if err != nil || alg != "RS256" {
		return Claims{}, invalid("alg %q is not RS256", clip(alg))
	}
	kid, err := h.str("kid")
	if err != nil || kid == "" {
		return Claims{}, invalid("no kid in header")
	}
	if _, ok := h["crit"]; ok {
		return Claims{}, invalid("header names critical extensions")
	}
	sig, err := base64.RawURLEncoding.DecodeString(s64)
	if err != nil {
		return Claims{}, invalid("signature is not base64url")
	}
	key, err := v.o.Keys.Key(ctx, kid)
	if err != nil {
		return Claims{}, err
	}
	digest := sha256.Sum256([]byte(token[:len(h64)+1+len(c64)]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig); err != nil {
		return Claims{}, invalid("bad signature")
	}
	c, err := decodePart(c64)
	if err != nil {
		return Claims{}, invalid("claims: %v", err)
	}
	return v.check(c)
}

// check applies the rules to a genuine token's claims.
func (v *Verifier) check(c object) (Claims, error) {
	now := v.o.Now()
	exp, err := c.date("exp")
	if err != nil || exp.IsZero() {
		return Claims{}, invalid("exp missing or not a number")
	}
	if !now.Before(exp.Add(v.o.Leeway)) {
		return Claims{}, invalid("expired at %s", exp.UTC().Format(time.RFC3339))
	}
	nbf, err := c.date("nbf")
	if err != nil {
		return Claims{}, invalid("nbf is not a number")
	}
	if !nbf.IsZero() && now.Add(v.o.Leeway).Before(nbf) {
		return Claims{}, invalid("not valid before %s", nbf.UTC().Format(time.RFC3339))
	}
	iss, err := c.str("iss")
	if err != nil || !slices.Contains(v.o.Issuers, iss) {
		return Claims{}, invalid("issuer %q is not accepted", clip(iss))
	}
	aud, err := audience(c, v.o.Audiences)
	if err != nil {
		return Claims{}, err
	}
	var out Claims
	for _, f := range []struct {
		name string
		dst  *string
	}{{"sub", &out.Subject}, {"tid", &out.TenantID}, {"idtyp", &out.IDType}, {"scp", &out.Scope}} {
		if *f.dst, err = c.str(f.name); err != nil {
			return Claims{}, invalid("%s is not a string", f.name)
		}
	}
	if out.Roles, err = c.strs("roles"); err != nil {
		return Claims{}, invalid("roles is not a list of strings")
	}
	azp, err1 := c.str("azp")
	appid, err2 := c.str("appid")
	if err1 != nil || err2 != nil || (azp != "" && appid != "" && !strings.EqualFold(azp, appid)) {
		return Claims{}, invalid("azp and appid malformed or disagreeing")
	}
	app := cmp.Or(azp, appid)
	if app == "" {
		return Claims{}, invalid("no azp or appid claim")
	}
	if v.o.AppOnly {
		if err := v.application(out); err != nil {
			return Claims{}, err
		}
	}
	out.AppID, out.Issuer, out.Audience, out.Expires = strings.ToLower(app), iss, aud, exp
	return out, nil
}

// application refuses tokens issued to a user (delegated tokens): a client
// application acting for someone is not the application itself.
func (v *Verifier) application(c Claims) error {
	if c.Scope != "" || c.IDType == "user" {
		return invalid("a delegated (user) token, not an application token")
	}
	if len(v.o.Roles) > 0 {
		for _, r := range c.Roles {
			if slices.Contains(v.o.Roles, r) {
				return nil
			}
		}
		return invalid("no required role in roles")
	}
	if c.IDType != "app" {
		return invalid("idtyp is not app")
	}
	return nil
}

// object is a JSON object decoded strictly: exact member names, each once,
// nothing after it.
type object map[string]json.RawMessage

func decodePart(s string) (object, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("not base64url")
	}
	if !utf8.Valid(b) {
		return nil, errors.New("not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	o := object{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, errors.New("not a JSON object")
		}
		name, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, errors.New("not a JSON object")
		}
		if _, dup := o[name]; dup {
			return nil, fmt.Errorf("member %q appears twice", clip(name))
		}
		o[name] = raw
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, errors.New("not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return o, nil
}

// str is the named member as a string; "" if absent, an error if it is
// anything but a string.
func (o object) str(name string) (string, error) {
	raw, ok := o[name]
	if !ok {
		return "", nil
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", errors.New("not a string")
	}
	return s, nil
}

// strs is the named member as a list of strings; nil if absent.
func (o object) strs(name string) ([]string, error) {
	raw, ok := o[name]
	if !ok {
		return nil, nil
	}
	var list []string
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &list) != nil || slices.Contains(list, "") {
		return nil, errors.New("not a list of strings")
	}
	return list, nil
}

// date is the named member as a NumericDate (seconds since the epoch, a
// JSON number: never a string); zero if absent.
func (o object) date(name string) (time.Time, error) {
	raw, ok := o[name]
	if !ok {
		return time.Time{}, nil
	}
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return time.Time{}, errors.New("not a number")
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsNaN(f) || f <= 0 || f > 1e11 {
		return time.Time{}, errors.New("not a date")
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), nil
}

// audience returns the accepted audience among the token's aud (a string
// or a list of strings).
func audience(c object, accepted []string) (string, error) {
	list, err := c.strs("aud")
	if err != nil {
		one, serr := c.str("aud")
		list, err = []string{one}, serr
	}
	if err != nil || len(list) == 0 || list[0] == "" {
		return "", invalid("aud missing or malformed")
	}
	for _, a := range list {
		if slices.Contains(accepted, a) {
			return a, nil
		}
	}
	return "", invalid("audience is not accepted")
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
