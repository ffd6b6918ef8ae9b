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
// # What the service says
//
// The client passes every answer's x-ratelimit-remaining-tokens and
// x-ratelimit-remaining-requests, and every 429 with its wait, to
// Observe. A 429 stops the limiter's admissions for the wait it names (at
// least a second), so the process's other requests do not run into the
// same wall; an admitted answer that leaves fewer tokens than the next
// request needs, or no request, stops them for a second (Azure counts in
// one-second buckets): the service sees less room than the limiter, so
// another client uses the deployment or clocks disagree. Absent or
// negative headers (Azure has sent -1) say nothing.
//
// # One quota for the whole fleet
//
// A Limiter paces one process; a Fleet makes the processes of both pools
// (Functions instances, AKS pods) that call a deployment share its whole
// quota, however many of them run. Each deployment has one pool record in
// a LeaseStore (a Table Storage row), changed only by ETag-guarded writes.
// A process leases a part of the quota (tokens and requests per minute)
// and resizes its limiter to it; every Renew interval (10 s; 20 s while
// nothing changes and every lease is its fair part; as soon as a part it
// waits for stops cooling, but not within 2 s of the last) it loads the
// record and saves its renewed lease: two storage operations per process
// per renewal, whatever the number of model calls, so storage is never on
// a call's path.
//
// The split is max-min fair by what each process wants: a process whose
// requests waited for room wants the whole quota, one that did not wants
// what its window and queue hold, with a quarter more as headroom. So an
// idle or lightly loaded instance gets what it uses, and the busy ones
// split the rest equally; a pod working through a large document cannot
// starve instances with small ones, which get an equal part as soon as
// they have to wait. What nobody wants is split equally as headroom. A
// limit admits whole requests only, so a process's token part is rounded
// to whole requests of its current charge: up when the pool has the room,
// down otherwise (sixteen parts of 7,500 tokens serving 11 requests of 626
// would otherwise waste a twelfth of the quota).
//
// The invariant is that the parts given out, plus those still cooling,
// never exceed the quota, in any window:
//
//   - A process grows only into what is free, and only once the pool says
//     so (after the save).
//   - A process shrinks before it saves, and the part it gives up cools:
//     it becomes free for the others as the admissions its limiter counted
//     against it leave the window (its limiter never holds more than the
//     larger of its new limit and what is left of them), plus Skew (1 s)
//     for clocks that disagree. A small decrease (5%) is not made: wants
//     move a little at every renewal, and cooling costs throughput.
//   - A lease lasts TTL (30 s) unrenewed. A process that vanishes strands
//     its part for at most that plus one window; its holder stops using it
//     when it ends. A process that stops cleanly (Release, at shutdown)
//     gives its part back at once, cooling as above.
//
// When the store cannot be reached, a process keeps its lease until it
// expires, then uses its static share, the quota divided by the most
// processes the platform may run (the sizing's per-instance budget), and
// logs it once; it says so again when the store answers, and moves back
// to a lease once the pool has at least as much for it. The static share
// is safe when every process is on it; while only some are, they may
// exceed the quota by their static shares, and the 429s that follow are
// waited out as told.
//
// A request charged more than a process's part is counted as the whole
// part (see Algorithm): it waits for an empty window, then goes, and may
// exceed the quota by the difference. Keep requests well below the
// quota divided by the processes that run at once (the embedding batch's
// token bound is there for that).
//
// # Sizing
//
// Without a Fleet, give each process the deployment's quota divided by N
// (PerInstance), and keep N bounded: maxReplicaCount on AKS, maximum
// instance count on Functions. With one, the quota is the deployment's
// own; N only sets the static share used without the store.
package ratelimit
