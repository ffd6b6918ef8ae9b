// Package llm is the queue path's adapter to Azure OpenAI: it embeds chunks
// and asks a chat deployment for a summary and keywords, through the
// openai-go client on the classic data plane (azure.WithEndpoint, an
// api-version, and an API key or an Entra ID credential).
//
// It exists to make three things exact, because the queue path meters
// every token to a tenant and must tell results from failures:
//
//   - Usage is the service's own, from every response, summed per call:
//     prompt, completion, cached and reasoning tokens.
//   - A content-filter refusal is a result, not a failure. Both shapes are
//     recognised: HTTP 400 with code "content_filter" (the prompt was
//     blocked; the innererror is read in all three spellings Azure uses)
//     and HTTP 200 with finish_reason "content_filter" (the completion was
//     blocked). Either returns an outcome.Refused error wrapping a *Refusal
//     that carries the categories and the usage the service charged (the
//     200 shape reports usage; the 400 shape reports none). Refusals are
//     never retried.
//   - 429s, 5xx, timeouts and broken connections are retried here, in
//     process: the wait honours retry-after-ms, then Retry-After, and
//     otherwise backs off exponentially, with jitter so that instances
//     throttled together do not return together. The budget is the
//     caller's context deadline (set it safely below the Service Bus lock
//     and functionTimeout); a wait that would leave less than
//     Config.MinAttemptTime before it is not started, and the call
//     returns outcome.Retry with the wait it would have needed, so the host
//     abandons the message and Service Bus redelivers it. The SDK's own
//     retries are off (option.WithMaxRetries(0)), so every attempt and
//     every wait is ours and counted in the Trace.
//
// Other 4xx answers are outcome.Reject: the request can never succeed.
// 401, 403 and 404 are the exception: they mean a wrong key, role or
// deployment name, which is fixed by an operator, not by the tenant, so
// they are transient (not retried in process) and the messages end in the
// dead-letter queue rather than being recorded as rejected documents.
//
// Before every attempt the client waits on its Limiter (package ratelimit)
// for room for the request's charge, estimated the way Azure estimates it:
// prompt tokens (package tokens) plus max tokens for chat, input tokens for
// embeddings. After it, a Limiter that also observes (*ratelimit.Set) is
// told what the answer said about the deployment's room:
// x-ratelimit-remaining-tokens and -requests, and a 429's wait.
//
// Neither prompts nor document text are ever logged; errors carry the
// service's code and message, which do not contain them.
package llm
