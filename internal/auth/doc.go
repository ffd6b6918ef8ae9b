// Package auth decides who is calling the REST API: a tenant, by its API
// key or by an Entra ID token whose application maps to it, or the
// operator, by the admin key. It answers with a Principal or with one of
// two errors the API turns into statuses: ErrUnauthenticated (401: no
// credential, a malformed or unknown one, a wrong secret, an expired key or
// token — deliberately indistinguishable to the caller, so that nothing
// hints at which tenants or keys exist) and ErrForbidden (403: a genuine
// credential of a suspended tenant). Anything else is a storage failure
// (503, try again).
//
// Credentials are presented as "Authorization: Bearer <credential>", or an
// API key alone as "api-key: <key>" (the header Azure OpenAI clients
// already send). The credential's prefix says what it is: "opk_" a tenant
// API key, "opa_" the admin key, anything else an Entra ID access token.
//
// Looked-up credentials are cached for a short TTL (30 s by default), so a
// warm request costs a map lookup and one HMAC: a few microseconds. The
// price is that a suspension or revocation made elsewhere takes up to the
// TTL to reach every instance (Forget applies it at once to this one); key
// expiry is checked on every request, so a rotated-out key stops at its
// exact expiry.
//
// Nothing in this package logs, and no error it returns contains a
// credential or any part of one.
package auth
