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
// Looked-up credentials are cached, so a warm request costs a map lookup
// and one HMAC: a few microseconds. A change made anywhere (a key revoked,
// a rotation's overlap cut short, a tenant suspended or reactivated, an
// application id mapped or unmapped) is enforced by every instance within
// the revocation bound (5 s by default): storage keeps a credential epoch
// that moves with every tenant change, each instance reads it in the
// background, and never trusts it older than the bound; a move drops every
// cached entry. While the epoch cannot be read, cached entries live out
// their TTL (30 s by default) and no longer. Forget applies a change made
// through this instance at once; key expiry is checked on every request,
// so a rotated-out key stops at its exact expiry.
//
// Hostile input is kept from storage: ids that do not exist are cached
// apart from genuine credentials (a flood of made-up ids cannot evict
// them), an unknown key id costs the same HMAC as a wrong secret, and a
// source (the last X-Forwarded-For entry, else the peer) that has failed
// FailuresPerMinute times gets answers from the cache only until its
// budget refills.
//
// Nothing in this package logs, and no error it returns contains a
// credential or any part of one.
package auth
