// Package azopenai is offpath's one adapter to Azure OpenAI, over openai-go
// v3: the queue path's calls to a deployment (embeddings and a summary with
// keywords, [QueueClient]) and the batch path's Files and Batches APIs
// ([BatchClient]). Both share one transport and authentication (the
// classic surface with an api-version, or v1; an API key or an Entra ID
// credential), one classification of failures, one reading of Retry-After
// and one backoff, so this package is the one place that knows Azure
// OpenAI's wire behaviour. The SDK's own retries are off for every call
// (option.WithMaxRetries(0)): every attempt and every wait is this
// package's, counted and logged.
//
// # Errors
//
// Every failure is classified once, by the table below (classify); the
// sentinels are for errors.Is (all but ErrContentFilter are package
// batch's: the control plane's vocabulary for Azure's answers), and every
// returned error is classified for outcome.Of:
//
//	what Azure answered                      outcome     sentinel          in-process retry
//	400 content_filter                       Refused     ErrContentFilter  no: a result (queue calls)
//	400 token_limit_exceeded (create)        Transient   ErrQuotaFull      no: hold and resubmit
//	batch failed: token_limit_exceeded       Transient   ErrQuotaFull      (AzureBatch.Err) resubmit, new attempt
//	batch failed: other validation error     Rejected    -                 (AzureBatch.Err)
//	other 400, 413, 422 ...                  Rejected    -                 no
//	401, 403                                 Transient   ErrAzureAuth      no: configuration, alert
//	404                                      Rejected    ErrAzureNotFound  no
//	409                                      Rejected    ErrAzureConflict  no
//	408, 429, 5xx                            Transient   -                 yes, Retry-After honoured
//	connection error, attempt timeout        Transient   -                 yes
//	create with unknown outcome, unresolved  Transient   ErrAmbiguous      lookup first, then yes
//	caller's ctx cancelled                   ctx error   -                 no
//
// The queue calls read two rows differently (queueVerdict): a 404 there
// names a wrong deployment, which an operator fixes, so it is transient and
// not retried (like a 401: the message ends in the dead-letter queue rather
// than the document being recorded as rejected), and a 409 is retried.
//
// The wait before a retry is retry-after-ms, then Retry-After (seconds or an
// HTTP date), when the service names one, else an exponential backoff with
// jitter. Messages from Azure are kept in errors (clipped); prompts and
// document text are never logged.
//
// # Queue calls
//
// [QueueClient] is the queue path's ingest.Models: it returns package
// ingest's values (Embeddings, Summary, Trace, Refusal) with the usage as
// a ledger.Usage, and makes three things exact, because the queue path
// meters every token to a tenant and must tell results from failures:
//
//   - Usage is the service's own, from every response, summed per call:
//     prompt, completion, cached and reasoning tokens.
//   - A content-filter refusal is a result, not a failure. Both shapes are
//     recognised: HTTP 400 with code "content_filter" (the prompt was
//     blocked; the innererror is read in all three spellings Azure uses)
//     and HTTP 200 with finish_reason "content_filter" (the completion was
//     blocked). Either returns an outcome.Refused error wrapping an
//     *ingest.Refusal that carries the categories and the usage the
//     service charged (the 200 shape reports usage; the 400 shape reports
//     none). Refusals are never retried.
//   - 429s, 5xx, timeouts and broken connections are retried in process.
//     The budget is the caller's context deadline (set it safely below the
//     Service Bus lock and functionTimeout); a wait that would leave less
//     than QueueConfig.MinAttemptTime before it is not started, and the
//     call returns outcome.Retry with the wait it would have needed, so the
//     host abandons the message and Service Bus redelivers it. The jitter
//     keeps instances throttled together from returning together.
//
// Before every attempt the client waits on its Limiter (package ratelimit)
// for room for the request's charge, estimated the way Azure estimates it:
// prompt tokens (package tokens) plus max tokens for chat, input tokens for
// embeddings. After it, a Limiter that also observes (*ratelimit.Set) is
// told what the answer said about the deployment's room:
// x-ratelimit-remaining-tokens and -requests, and a 429's wait.
//
// # Batch calls
//
// offpath is the only submitter of Global Batch jobs, so [BatchClient] is
// the one place that uploads inputs, creates, polls, cancels and lists
// batches, and downloads their output: it makes creates idempotent, and
// uploads and downloads with flat memory.
//
// openai-go retries POSTs on timeouts and 5xx, which would duplicate batch
// jobs (and count their tokens twice against the enqueued quota). Here the
// SDK never retries. Each batch carries offpath's submission key in its
// metadata (offpath_job, offpath_part, offpath_attempt); a create whose
// outcome is unknown is resolved by listing batches and finding that key
// before anything is sent again (Submission.MaybeCreated; Submission.Since
// stops the newest-first listing at batches older than the job). A batch
// found by its key is the submission's whatever input file it names. See
// [BatchClient.CreateBatch].
//
// The values the batch calls take and return (AzureBatch, AzureFile,
// Submission, Created, the metadata keys) are package batch's, as the
// control plane sees them; this package reads Azure's wire format into
// them and keeps the SDK's types to itself.
//
// [BatchClient.UploadFile] streams the multipart body (openai-go's
// Files.New buffers it whole); [BatchClient.OpenFileContent] hands back the
// response body unread.
//
// In-process retries apply to idempotent calls (get, list, cancel, delete,
// opening a download) and to a create proved not to have happened: at most
// BatchConfig.MaxAttempts attempts, waiting the service's wait up to
// BatchConfig.MaxRetryWait (a longer wait is returned as the error's
// outcome.RetryAfter hint). Uploads are not retried (their body is read
// once).
package azopenai
