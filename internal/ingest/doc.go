// Package ingest is the queue path's business flow: a document dropped into
// the incoming container becomes chunks with vectors, a summary and
// keywords in the ingested container, findable within minutes, with every
// token metered to its tenant.
//
// Two halves, on either side of Service Bus:
//
//   - Enqueuer (the blob-triggered ingest-enqueue function) validates an
//     upload — its name, its tenant (exists, active, allowed the ingestion
//     alias), its size and type — and answers a claim check (package
//     claimcheck) for the light or the heavy queue; a rejected upload is
//     recorded as such and never enqueued. Of the trigger it trusts only
//     the blob's name: the ETag, size, content type and correlation id come
//     from one Get Properties call on the blob, which also proves it exists
//     and pins the version the Processor reads.
//   - Processor (the Service Bus-triggered ingest-process and
//     ingest-process-heavy functions, one implementation) redeems a claim
//     check: it streams the blob pinned to the claim check's ETag, extracts
//     its text (package extract), cuts it into overlapping chunks (package
//     chunk), embeds them and asks for a summary (package azopenai), writes
//     ingested/{tenant}/{path}.jsonl, meters the usage to the ledger and
//     records the document's status.
//
// Outcomes follow package outcome. A content-filter refusal is a result:
// recorded as refused, metered, answered 2xx; if the summary was refused
// the chunks are still written. Poison input is rejected, recorded
// (Rejections, which also records the invocations the protocol layer finds
// undecodable) and answered 2xx. Only infrastructure failures answer non-2xx, after package
// azopenai has waited out 429s and 5xx in process within the invocation's
// deadline, so Service Bus redelivers them and dead-letters what keeps
// failing.
//
// Processing is idempotent per document version (blob URL and ETag): a
// redelivered message for a version already finished does nothing and
// meters nothing. Every model call is metered when it returns, into rows
// keyed by the version, the message and its delivery (AttemptUnit): the
// same delivery rewrites its rows, a new delivery (or a second message
// with the same claim check) adds its own, so the spend of a
// delivery that crashed or was retried stays in the ledger, unfinished
// (an abandoned attempt), and the ledger holds what Azure billed; the
// delivery that ends the document marks its rows finished and those of
// earlier deliveries abandoned. The result is staged and committed in one
// step (ResultWriter), so no partial result is ever visible, and it is
// committed after the usage is recorded and before the status says done.
//
// Neither document text nor prompts are logged: log lines carry the
// tenant, the correlation id, counts and reasons.
package ingest
