// Package aoaisim simulates an Azure OpenAI resource: chat completions,
// embeddings, the Files API and Global Batch jobs, with Azure's content
// filter, TPM/RPM limits, enqueued-token quota and injectable faults. No Azure
// OpenAI resource is reachable from development or CI, so offpath's tests and
// `make run` talk to this instead, through the real openai-go client. The
// formats follow Azure's documentation and what the service is seen to send.
//
// # Use
//
// In tests:
//
//	sim, err := aoaisim.New(aoaisim.Config{Deployments: ...}, logger)
//	ts := httptest.NewServer(sim)
//	defer ts.Close(); defer sim.Close() // sim first: it releases hanging requests
//	client := openai.NewClient(azure.WithEndpoint(ts.URL, "2025-04-01-preview"),
//		azure.WithAPIKey(aoaisim.DefaultKey), azure.WithUnsafeAllowHTTP())
//
// or Start(addr) to listen on a loopback port. cmd/aoaisim wraps it as a
// program.
//
// # Surface
//
// Classic data plane (api-version required, else 404):
//
//	POST   /openai/deployments/{deployment}/chat/completions
//	POST   /openai/deployments/{deployment}/embeddings
//	POST   /openai/files                    multipart: file, purpose, expires_after[anchor|seconds]
//	GET    /openai/files[?purpose=&limit=&after=&order=]
//	GET    /openai/files/{id}
//	GET    /openai/files/{id}/content
//	DELETE /openai/files/{id}
//	POST   /openai/batches
//	GET    /openai/batches[?limit=&after=]
//	GET    /openai/batches/{id}
//	POST   /openai/batches/{id}/cancel
//
// and the same under /openai/v1/ (chat and embeddings as /openai/v1/chat/completions
// and /openai/v1/embeddings with the deployment in body.model). Create calls
// answer 201 on the classic surface (as its REST reference documents) and 200
// on v1 (OpenAI's). Keys are accepted as "api-key: K" or "Authorization:
// Bearer K"; anything else is Azure's 401.
//
// Batches run the chat completions endpoint or the Responses API's
// (endpoint "/responses" or "/v1/responses", lines with url
// "/v1/responses"); a Responses line is answered as a response object, a
// filtered completion as status "incomplete" with incomplete_details
// {"reason": "content_filter"} (see responses.go). The Responses API is not
// served synchronously.
//
// # Configuration file
//
// The -config file of cmd/aoaisim is the JSON form of [Config]:
//
//	{
//	  "keys": ["aoaisim-key"],
//	  "deployments": [
//	    {"name": "gpt-4o-mini", "model": "gpt-4o-mini", "model_version": "2024-07-18",
//	     "type": "standard", "tpm": 30000},
//	    {"name": "text-embedding-3-small", "model": "text-embedding-3-small", "tpm": 120000},
//	    {"name": "gpt-4o-mini-batch", "model": "gpt-4o-mini", "type": "global-batch",
//	     "enqueued_token_quota": 5000000, "quota_behaviour": "fail_fast"}
//	  ],
//	  "content_filter": {"prompt_triggers": ["SIM_FILTER_PROMPT", {"phrase": "how to build a weapon", "category": "violence"}]},
//	  "batch": {"lines_per_minute": 1000, "validation_time": "2m", "expiry": "expire"},
//	  "faults": [{"deployment": "gpt-4o-mini", "route": "chat", "error_rate": 0.05}],
//	  "speed": 60
//	}
//
// Durations are Go duration strings or seconds. Every field and its default
// is documented on [Config], [Deployment], [BatchConfig], [FilesConfig],
// [ContentFilter], [FaultRule] and [Quirks].
//
// # Determinism
//
// Completion text is "(simulated) " and sentences of the last user message,
// in their order from one picked by a hash of the request's messages, at most
// 8 to 48 tokens long (the hash picks the length), cut at
// max_completion_tokens / max_tokens (finish_reason "length").
// Tokens follow the approximation documented in tokens.go ([TextTokens],
// [PromptTokens]): ceil(bytes/4) per text, plus 4 per message and 3 per
// prompt; synchronous and batch usage agree. Embeddings are unit vectors
// derived from the input. The enqueued-token estimate of a batch file is
// [EnqueuedTokens]: ceil(file bytes / 4).
//
// # Rate limits
//
// Per deployment, a sliding 60 s window (one-second buckets) on requests
// (RPM, default 6 per 1,000 TPM) and tokens (TPM). A request is charged
// prompt tokens + max tokens × n at admission (Config.DefaultMaxTokens when
// unset). Refusals are HTTP 429 with code "429", retry-after, retry-after-ms
// and x-ratelimit-remaining-*; the latter are also on every admitted reply.
//
// # Batches
//
// A job moves validating → in_progress → finalizing → completed, or to
// failed, expired (partial output) or cancelling → cancelled (partial output),
// on the simulated [Clock]. Input and output files live on disk; validation
// and processing stream the file line by line and output lines are written
// through a small shuffle window, so memory does not grow with the file.
//
// # Administration
//
// Under /_sim/ (same keys): GET /_sim/state (clock, batches, files, counters),
// GET|PUT|POST|DELETE /_sim/faults ({"rules":[FaultRule...]}), and
// POST /_sim/clock ({"advance":"25h"} and/or {"speed":3600}).
package aoaisim
