// Package claimcheck is the message of offpath's queue path: the claim check
// that the enqueue function writes to Service Bus when a document lands in
// the incoming container, and that the process functions redeem. It carries a
// reference to the blob (URL, ETag, size, content type) and who it is for
// (tenant, model alias, correlation id), never the document, so messages stay
// small, queue depth stays meaningful, and a document's bytes live in one
// place with one access policy.
//
// The package is the domain: it imports nothing but the standard library and
// package outcome. It owns three decisions that must agree on both sides of
// the queue:
//
//   - what a message looks like on the wire (JSON with a version field,
//     decoded strictly: unknown, duplicate or miscased fields, trailing data,
//     and anything larger than MaxEncodedBytes are rejected);
//   - which blobs may be referenced: only names under incoming/{tenant}/ of
//     the configured storage account, where {tenant} is the message's own
//     tenant, with no traversal (".." or "." segments, percent-encoded or
//     not), no control or format characters, at most 1,024 bytes, and one of
//     the supported extensions;
//   - which queue a message goes to: doc-ingest, or doc-ingest-heavy for
//     documents at or above a size threshold (heavy work runs on AKS).
//
// The Functions host binds blob path tokens greedily ("incoming/{tenant}/{name}"
// binds tenant "acme/reports" for "acme/reports/q1.txt"), so the enqueue
// trigger binds "incoming/{name}" and calls SplitTenant or Rules.ParseName to
// take the tenant from the first segment itself.
//
// Every validation failure is an outcome.Reject: a malformed message or an
// illegal blob name can never succeed, so it is recorded, not retried.
package claimcheck
