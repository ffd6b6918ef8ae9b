// Package invoke is the handler's side of the Azure Functions custom-handler
// protocol: the host POSTs a JSON envelope to /{FunctionName} per trigger (or
// forwards the raw HTTP request for HTTP-only functions), and the handler must
// answer by the host's rules. The package exists so that no function ever
// meets the wire's traps itself:
//
//   - Decoding is tolerant (see Value): strings arrive JSON-encoded twice,
//     numbers and booleans arrive as strings, timestamps come zone-less,
//     with +00:00, or as 0001-01-01T00:00:00 for "never", bodies arrive as
//     base64 when the binding says dataType binary, and unknown Metadata keys
//     such as MessageActions are ignored.
//   - Replies are always 2xx, Content-Type application/json and a non-null
//     object for handled outcomes; output values are typed (Output) so that a
//     word such as "done" can never reach the host as a string it would
//     base64-decode, nor a JSON array it would split into several messages.
//   - Every invocation runs behind panic recovery, a logger carrying its
//     invocation id and function name (whose lines are also returned in Logs),
//     and a deadline below the host's functionTimeout.
//   - Data no retry can fix is a rejection, never a retry: an envelope whose
//     trigger data cannot be decoded (a wrong JSON type, invalid base64, no
//     Data, nothing that locates a blob) is answered 2xx, so the host
//     completes the trigger, and handed to Options.Rejections to record;
//     Mux.reject is that one rule, for every trigger. A body that is no
//     envelope at all (not JSON, not an object) is answered 400.
//   - Blob Properties are advisory (see Blob): every known shape decodes,
//     and an unknown or missing one decodes to nothing rather than failing.
//   - The outcome of a function (package outcome) maps to the reply in one
//     place, Mux.reply: done, refused and rejected complete the trigger;
//     transient failures answer non-2xx so that the host retries (Service Bus
//     abandons and eventually dead-letters; blobs retry then go poison; timers
//     log and fire again), except HTTP envelope functions, whose caller gets a
//     503 with Retry-After.
package invoke
