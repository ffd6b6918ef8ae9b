// Package batchfile reads and writes the JSONL files of Azure OpenAI Global
// Batch jobs: the request lines offpath uploads, the index that ties each
// line back to a tenant and the tenant's item, and the output and error lines
// Azure returns. It is pure Go and imports no SDK, so the formats can be
// tested byte for byte and reused by the simulator's users and the harvester
// alike.
//
// # Input
//
// [Writer] streams one request line per [Item]: UTF-8 without a byte-order
// mark (Azure fails a BOM file with a misleading "model deployment name"
// error), "\n" line endings, every line's body.model set to the same
// global-batch deployment. Nothing but the line being encoded is held in
// memory. When the next line would take a part past [Limits] (by default
// Azure's 200 MB and 100,000 requests per file), the writer closes the part
// and opens the next, so the caller creates one Azure job per [Part].
//
// # custom_id
//
// Azure returns lines in any order and custom_id is the only join key. Item
// ids come from tenants and may be long, contain control characters or be
// invalid UTF-8, and two tenants (or one careless tenant) may reuse the same
// item id; Azure fails the whole file on a duplicate custom_id and documents
// no maximum length (tooling commonly assumes 64 characters). So the
// custom_id never contains the item id. It is positional:
//
//	{job}.{part}.{line}.{check}
//
//	job    offpath's short job id, [A-Za-z0-9_-]{1,32}
//	part   the part (file) index within the job, decimal, from 0
//	line   the line index within the part, decimal, from 0
//	check  8 characters of base64url(SHA-256(len(tenant) ‖ tenant ‖ item)), 48 bits
//
// e.g. "j7Hq2-x.0.41872.Qm9vdF9j". It is at most 55 characters of
// [A-Za-z0-9_.-], unique within a job by construction (whatever the item ids),
// and [ParseCustomID] reverses it exactly.
//
// The tenant and item id of each line are written, as the line is, to the
// part's index (a sidecar JSONL file the caller stores next to its copy of
// the input): a header naming the job and the part, then one entry per
// line, in line order, holding the tenant and the item id and not the
// custom_id, which is the entry's position and check. Joining an output
// line is then: parse the custom_id, look its (part, line) up in the index
// ([IndexReader], which refuses an index whose header names another job or
// part), and confirm the check against the entry's tenant and item, so
// that a foreign or altered entry is detected rather than trusted. Item
// ids that are not valid UTF-8 are stored base64url-encoded in the index so
// that they come back byte for byte.
//
// # Output
//
// [Reader] streams an output or error file and yields one [Result] per line:
// the custom_id, the outcome (ok, refused by either content-filter shape,
// failed with code and message), the answer text and the usage exactly as
// reported. Unknown fields are ignored; a line that lacks what attribution
// needs (custom_id, a readable status, integer usage) is reported as a
// [LineError] and reading goes on. No line, however hostile, makes it panic
// (see the fuzz tests).
package batchfile
