// Package entratest is a stand-in Entra ID token issuer for tests: it holds
// an RSA signing key, mints RS256 access tokens with any claims, and
// publishes its key as a StaticKeys set or a JWKS document on a loopback
// httptest server. Nothing here talks to Entra ID.
package entratest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/entra"
)

// Defaults for tokens minted by Token.
const (
	DirectoryID = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	Issuer      = "https://login.microsoftonline.com/" + DirectoryID + "/v2.0"
	Audience    = "api://offpath"
)

// Signer mints tokens.
type Signer struct {
	Kid string
	Key *rsa.PrivateKey
}

// New returns a Signer with a fresh 2048-bit key.
func New(tb testing.TB, kid string) *Signer {
	tb.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	return &Signer{Kid: kid, Key: k}
}

// Keys returns the signer's public key as a KeySet.
func (s *Signer) Keys() entra.StaticKeys { return entra.StaticKeys{s.Kid: &s.Key.PublicKey} }

// ObjectID is the service principal's (and a token's oid) in Claims.
const ObjectID = "5d0c7a5e-6a2b-4c1d-9e8f-0a1b2c3d4e5f"

// Claims returns the claims of a valid v2.0 application token (the client
// credentials flow, idtyp "app") for appID, expiring in an hour from now.
func Claims(appID string, now time.Time) map[string]any {
	return map[string]any{
		"iss": Issuer, "aud": Audience, "azp": appID, "azpacr": "1", "tid": DirectoryID, "sub": ObjectID, "oid": ObjectID,
		"idtyp": "app", "ver": "2.0", "iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

// DelegatedClaims returns the claims of a valid v2.0 delegated token: a
// user signed in to the client application appID, which calls with scp.
func DelegatedClaims(appID string, now time.Time) map[string]any {
	c := Claims(appID, now)
	c["idtyp"], c["scp"], c["sub"], c["oid"], c["name"] = "user", "access_as_user", "user-subject", "user-object-id", "A User"
	return c
}

// Token signs claims with the given header fields (alg RS256 and the
// signer's kid unless header overrides them).
func (s *Signer) Token(tb testing.TB, claims map[string]any, header map[string]any) string {
	tb.Helper()
	h := map[string]any{"alg": "RS256", "typ": "JWT", "kid": s.Kid}
	for k, v := range header {
		h[k] = v
	}
	hb, err := json.Marshal(h)
	if err != nil {
		tb.Fatal(err)
	}
	cb, err := json.Marshal(claims)
	if err != nil {
		tb.Fatal(err)
	}
	return s.sign(tb, hb, cb)
}

// TokenRaw signs the claims text as it is (the header as Token makes it),
// for claims no encoder would write.
func (s *Signer) TokenRaw(tb testing.TB, claims string) string {
	tb.Helper()
	hb, err := json.Marshal(map[string]any{"alg": "RS256", "typ": "JWT", "kid": s.Kid})
	if err != nil {
		tb.Fatal(err)
	}
	return s.sign(tb, hb, []byte(claims))
}

// TokenWithHeader signs claims under the header text as it is.
func (s *Signer) TokenWithHeader(tb testing.TB, header string, claims map[string]any) string {
	tb.Helper()
	cb, err := json.Marshal(claims)
	if err != nil {
		tb.Fatal(err)
	}
	return s.sign(tb, []byte(header), cb)
}

func (s *Signer) sign(tb testing.TB, header, claims []byte) string {
	tb.Helper()
	signing := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(claims)
	digest := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.Key, crypto.SHA256, digest[:])
	if err != nil {
		tb.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// JWKS returns the JSON Web Key Set document publishing the signers' keys.
func JWKS(signers ...*Signer) []byte {
	type jwk struct {
		Kty string `json:"kty"`
		Use string `json:"use"`
		Kid string `json:"kid"`
		N   string `json:"n"`
		E   string `json:"e"`
	}
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	for _, s := range signers {
		pub := s.Key.PublicKey
		doc.Keys = append(doc.Keys, jwk{Kty: "RSA", Use: "sig", Kid: s.Kid,
			N: base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
			E: base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes())})
	}
	b, _ := json.Marshal(doc)
	return b
}

// Serve publishes the signers' keys as JWKS on a loopback server for the
// test's duration and returns its URL.
func Serve(tb testing.TB, signers ...*Signer) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(JWKS(signers...))
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}
