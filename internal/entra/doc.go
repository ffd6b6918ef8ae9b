// Package entra validates Microsoft Entra ID access tokens (RS256 JWTs)
// with the standard library alone: signature against the issuer's signing
// keys, issuer, audience, expiry and not-before with a small leeway. The
// header and the claims are read strictly: JSON objects with exact member
// names, each once, nothing after them; exp and nbf JSON numbers; alg
// exactly RS256; a header with crit is refused. With Options.AppOnly only
// application tokens pass: no scp, and idtyp "app" or one of the
// configured app roles. A
// tenant that runs as an Entra application authenticates to offpath with
// such a token instead of an API key; this package says whether the token
// is genuine and which application it was issued to, and package auth maps
// that application to a tenant.
//
// Signing keys come from a KeySet: JWKS fetches the issuer's published
// keys (the discovery document's jwks_uri), refreshes them in the
// background ahead of their age limit and when a token names a key it does
// not know, and never makes a token with a known key wait for a fetch;
// StaticKeys holds keys given directly, which is how tests inject theirs.
package entra
