// Package tenant is offpath's vocabulary for who is calling: a tenant (a team
// or an application), its state, the model aliases it may use, its monthly
// token budget, and its credentials. Every guarantee offpath gives rests on
// knowing the tenant, so the rules live here, once, with no storage or HTTP
// in sight: which ids are acceptable (ids become Table Storage keys, so the
// characters those keys forbid never get past Validate), what an API key
// looks like, how it is stored (only a salted HMAC of its secret), how it is
// checked (in constant time), and how a rotation keeps the previous key valid
// for an overlap so that a running client never breaks.
package tenant
