// Package batchapi is offpath's adapter to Azure OpenAI's Files and Batches
// APIs, over openai-go v3, on either the classic or the v1 surface. offpath
// is the only submitter of Global Batch jobs, so this is the one place that
// uploads inputs, creates, polls, cancels and lists batches, and downloads
// their output: it makes creates idempotent, uploads and downloads with
// flat memory, and classifies every failure once.
//
// # Idempotent create
//
// openai-go retries POSTs on timeouts and 5xx, which would duplicate batch
// jobs (and count their tokens twice against the enqueued quota). Here the
// SDK never retries. Each batch carries offpath's submission key in its
// metadata (offpath_job, offpath_part, offpath_attempt); a create whose
// outcome is unknown is resolved by listing batches and finding that key
// before anything is sent again (Submission.MaybeCreated; Submission.Since
// stops the newest-first listing at batches older than the job). A batch
// found by its key is the submission's whatever input file it names. See
// [Client.CreateBatch].
//
// # Streaming
//
// [Client.UploadFile] streams the multipart body (openai-go's Files.New
// buffers it whole); [Client.OpenFileContent] hands back the response body
// unread.
//
// # Errors
//
// Every returned error is wrapped with the operation and classified for
// outcome.Of; the sentinels below are for errors.Is:
//
//	what Azure answered                      outcome     sentinel       in-process retry
//	400 token_limit_exceeded (create)        Transient   ErrQuotaFull   no: hold and resubmit
//	batch failed: token_limit_exceeded       Transient   ErrQuotaFull   (Batch.Err) resubmit, new attempt
//	batch failed: other validation error     Rejected    -              (Batch.Err)
//	other 400, 413, 422 ...                  Rejected    -              no
//	401, 403                                 Transient   ErrAuth        no: configuration, alert
//	404                                      Rejected    ErrNotFound    no
//	409                                      Rejected    ErrConflict    no
//	408, 429, 5xx                            Transient   -              yes, Retry-After honoured
//	connection error, attempt timeout        Transient   -              yes
//	create with unknown outcome, unresolved  Transient   ErrAmbiguous   lookup first, then yes
//	caller's ctx cancelled                   ctx error   -              no
//
// In-process retries apply to idempotent calls (get, list, cancel, delete,
// opening a download) and to a create proved not to have happened: at most
// Config.MaxAttempts attempts, waiting retry-after-ms or Retry-After when
// given (up to Config.MaxRetryWait; a longer wait is returned as the
// error's outcome.RetryAfter hint), else 0.5 s doubling with jitter. Uploads
// are not retried (their body is read once).
//
// Messages from Azure are kept in errors (clipped); prompt and answer text
// never reach this package.
package batchapi
