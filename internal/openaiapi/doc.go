// Package openaiapi is offpath's OpenAI-compatible batch door: Azure
// OpenAI's Files and Batches API, so that code written against the official
// OpenAI and Azure OpenAI SDKs submits through offpath by changing its
// endpoint and key. It is served by the `openai` HTTP function in
// forwarding mode, on both of Azure's surfaces: /api/openai/v1/… (the
// OpenAI client's base URL …/api/openai/v1/) and the classic
// /api/openai/files|batches…?api-version=… (the AzureOpenAI client's
// endpoint …/api).
//
// Callers authenticate as Azure OpenAI clients do, with the tenant's
// offpath key in api-key or Authorization: Bearer, or an Entra ID token
// (package auth). Another tenant's file or batch is a 404, like one that
// does not exist. Errors have OpenAI's shape,
// {"error":{"message","type","param","code"}}, with Azure's codes, and
// the input line when an upload is refused.
//
// # Files
//
// An upload (multipart, purpose=batch) is streamed into the tenant's area
// of the uploads container and validated line by line as Azure validates a
// batch input: invalid_json_line (unparsable or blank lines, a byte-order
// mark), duplicate_custom_id, url_mismatch, model_mismatch, empty_file,
// too_many_tasks, and model_not_found for a body.model that is not one of
// the tenant's aliases with a Global Batch deployment. Each line becomes a
// control-plane item (custom_id, messages with text content, max_tokens or
// max_completion_tokens, temperature; other body fields are refused with
// their line). The limits are offpath's, since the control plane splits an
// input into as many Azure batches as Azure's 200 MB and 100,000 lines
// require: 1 GiB and 1,000,000 lines by default, within the Functions
// host's request size limit. A refused upload stores nothing.
//
// # Batches
//
// Creating a batch makes an ordinary offpath job from the file's items:
// the alias's Global Batch deployment, the tenant's budget, the quota hold,
// exact per-line attribution in the ledger. A retried create makes no
// second job: the Idempotency-Key header names the job when the client
// sends one; otherwise one uploaded file makes one batch, and a create
// with the same file and parameters returns it (other parameters: 409).
// The batch id is "batch_" and the job id. Every job of the tenant is
// listed, whichever door submitted it.
//
// Two metadata keys ask for the native API's scheduling, and stay in the
// batch's metadata: complete_by, an RFC 3339 time at least an hour and at
// most seven days ahead, when the answers are needed (a batch Azure holds
// back is then cancelled and its remaining requests run synchronously,
// package batch); and urgent, "true" to keep a small batch out of the
// packs it would otherwise share with other jobs. Anything else in them
// is a 400 that creates nothing. The answers of a deadline fallback are
// in the output file as Azure's would be (those not 200 in the error
// file), and request_counts count them.
//
// The status says where the job really is:
//
//	job                                    batch status
//	accepted, held (quota)                 validating
//	submitted, every part validating       validating
//	submitted, a part running or ended     in_progress
//	a part in its deadline fallback        in_progress
//	submitted, every part ended at Azure   finalizing
//	completed|failed|expired|cancelled     finalizing (output being copied)
//	cancel requested, not yet harvested    cancelling
//	harvested                              completed|failed|expired|cancelled
//
// A status is terminal only once the output is in platform storage, so a
// client that sees one can always download it. request_counts are Azure's
// over all parts; once harvested, failed counts every line not completed
// (what Azure never ran is in the error file). metadata is the caller's,
// plus offpath's view of the job (job id, state, alias, held reason) as
// JSON under the reserved key "offpath".
//
// # Output
//
// Once harvested, output_file_id and error_file_id name files written
// from offpath's copies of Azure's (never from Azure, which may have
// deleted its own): Azure's lines with the caller's custom_ids and each
// line's usage, and in the error file a line for each request Azure never
// ran (batch_cancelled, batch_expired, output_lost). They stay
// downloadable whatever Azure keeps.
//
// # Expiry
//
// An upload's expires_after and a batch's output_expires_after are
// honoured: from expires_at on the file is not found, and Sweep (run by
// the webhook-deliver timer) deletes the door's copy of it. The control
// plane's results and the ledger are never touched. A file without an
// expiry is kept.
package openaiapi
