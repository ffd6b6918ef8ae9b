// Package ratelimit paces the calls one process makes to an Azure OpenAI
// deployment so that a burst of queue messages becomes a steady stream of
// admitted requests rather than a burst of 429s. Twenty workers that all get
// 429 are worse than five that don't: every 429 is a wasted round trip, a
// wait the service dictates, and, once the in-process budget is gone, a
// redelivery.
//
// # What is counted
//
// Azure charges a request against the deployment's tokens-per-minute quota
// when it admits it, from an estimate: the prompt's tokens plus max_tokens
// (times n). The charge is not refunded when the completion turns out
// shorter. A Limiter charges the same amount at the same moment (the caller
// passes prompt + max tokens, estimated with package tokens) and refunds
// nothing either, so its view of the window matches the service's. Refunding
// unused completion tokens would let the limiter believe there is room the
// service does not see, which is exactly the burst of 429s this package
// exists to prevent. Requests per minute are counted alongside.
//
// # Algorithm
//
// A sliding-window log, not a token bucket. A token bucket sized to a
// minute's quota admits up to twice the quota in some 60-second span (a full
// bucket, then a minute of refill), which a sliding-window service answers
// with 429s; shrinking the bucket to avoid that caps throughput well below
// the quota. The log keeps each admission's time and charge; a request is
// admitted when the charges inside the trailing window, plus its own, stay
// within the limits. That allows the full quota, never more, in every
// window.
//
// Two windows are enforced by default: Window (61 s: the service's minute
// plus a second for the time a request spends between the limiter and the
// service and for the service's one-second buckets) for tokens and
// requests, and Burst (10 s) for requests only, with Burst/Window of the
// request limit, rounded up: Azure documents that it evaluates the request
// rate over short periods ("typically 1 or 10 seconds") and answers a
// minute's worth of requests arriving at once with 429s, while tokens are
// counted per minute. Tokens get no burst window on purpose: a short window
// with a share of the TPM admits only whole requests, and with requests of
// a few hundred tokens against a per-instance share of a few thousand that
// rounding alone costs a sixth of the throughput.
//
// A charge larger than a window's limit is counted as the whole limit of
// that window, so a request bigger than the per-instance share (the real
// deployment may still take it) waits for an empty window instead of
// forever.
//
// # Fairness and deadlines
//
// Waiters are served first come, first served: the request at the head of
// the queue waits for room, and those behind it wait for it, so a large
// request is not starved by a stream of small ones. Wait respects the
// context: it returns at once with a transient error (outcome.Retry wrapping
// ErrDeadline, with the expected wait as RetryAfter) when the room cannot
// come before the context's deadline, rather than waiting to fail.
//
// # Sizing
//
// A Limiter paces one process. With N instances (Functions scale-out, KEDA
// replicas), give each the deployment's quota divided by N (PerInstance),
// and keep N bounded: maxReplicaCount on AKS, maximum instance count on
// Functions.
package ratelimit
