// Package entra validates Microsoft Entra ID access tokens (RS256 JWTs)
// with the standard library alone: signature against the issuer's signing
// keys, issuer, audience, expiry and not-before with a small leeway. A
// tenant that runs as an Entra application authenticates to offpath with
// such a token instead of an API key; this package says whether the token
// is genuine and which application it was issued to, and package auth maps
// that application to a tenant.
//
// Signing keys come from a KeySet: JWKS fetches the issuer's published
// keys (the discovery document's jwks_uri) and refreshes them when a token
// names a key it does not know; StaticKeys holds keys given directly, which
// is how tests inject theirs.
package entra
