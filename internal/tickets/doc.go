// Package tickets reads the support tickets that the support system drops
// into blob storage during the day, so that the nightly summaries job can
// submit the ones not summarised yet as one batch. Tens of thousands of
// tickets are the normal case, and the files come from another system that
// offpath does not control, so the collector streams (it holds one ticket at
// a time, the ids it has seen, and a bounded read-ahead of the next files)
// and treats every file as hostile: a malformed ticket is skipped with a reason
// for the morning report and never fails the night.
//
// # Files and days
//
// Tickets live in one container (conventionally "tickets") under a folder
// per calendar day:
//
//	{yyyy-mm-dd}/{anything}.json     one ticket: a single JSON object
//	{yyyy-mm-dd}/{anything}.jsonl    many tickets: one JSON object per line
//	{yyyy-mm-dd}/{anything}.ndjson   the same as .jsonl
//
// The date is the day the support system dropped the file, in whatever zone
// the support organisation keeps its days; [DayPrefix] formats it from a
// time.Time in that time's own location. The day is in the name rather than
// taken from LastModified because a name is stable (LastModified moves when a
// blob is copied, restored or touched), a prefix listing costs what the day
// holds rather than the whole history of the container, and a re-run for the
// same day reads exactly the same files. Extensions are matched without
// regard to case; any other file under the day is reported as skipped.
// Nothing outside the day's folder is read.
//
// The easiest layout for an exporter is one blob per ticket named by its id
// ("2026-03-14/T-1042.json"), overwritten when the ticket changes; bulk
// exports as JSONL are equally fine.
//
// # Schema
//
// A ticket is a JSON object (UTF-8; a byte-order mark at the start of a
// file is ignored; JSON null counts as absent):
//
//	field       type               required  limit
//	id          string             yes       1–128 bytes: [A-Za-z0-9][A-Za-z0-9._-]*, case-sensitive
//	body        string             yes       not blank, at most 256 KiB (UTF-8, after JSON unescaping)
//	subject     string             no        at most 1 KiB
//	customer    string             no        at most 256 bytes (a name or an account id)
//	created_at  string (RFC 3339)  no        e.g. "2026-03-14T09:30:00Z"
//	(other)     any JSON           no        kept as raw JSON in [Ticket.Extra]
//
// A document (a .json file or one line of a .jsonl file) may be at most
// 8 MiB, so that a hostile file cannot make the collector hold an unbounded
// line; an empty or blank line is ignored. Field names are exact (encoding/json
// semantics for repeated keys: the last one counts). A document that breaks
// any rule is skipped with a [Skip] naming the blob, the line (1-based; 0 for
// a whole .json file), the id when it is valid, and a reason. The reasons
// never quote ticket text.
//
// Once a .jsonl file has had 100 malformed lines, the rest of it is skipped
// with one entry, so that a binary file or a pretty-printed JSON file with
// the wrong extension costs one line of the report rather than thousands.
// At most 10,000 skips are listed; [Result.SkippedTotal] counts them all.
//
// # Duplicates
//
// Blobs are read in name order (the order Azure lists them) and lines in
// file order, and the first valid occurrence of an id wins; any later one
// is skipped as a duplicate, the reason saying whether its content differs
// and where the first one was. First-wins is what a single streaming pass can
// decide without holding tickets back, and it is deterministic across
// re-runs. An exporter that writes several versions of one ticket in a day
// should either overwrite one blob per ticket or name its files so that they
// sort in time; a newer version that lost to an older one is picked up the
// next time it is exported, because its content then differs from what was
// summarised.
//
// # New, changed and unchanged
//
// [Hash] digests what a summary is made from: the subject and the body.
// For each first occurrence the collector asks [Summarised] for the hash of
// the version already summarised (or submitted for summary) under that id.
// A ticket with no record, or with a different hash, is new and is yielded;
// one with the same hash is counted as unchanged and not yielded. So a
// re-run of a night, or a ticket exported again without edits, submits
// nothing twice, provided the control plane records the hashes when it
// submits the batch, not only when it harvests it. The customer, created_at
// and unknown fields do not count: changing them does not change what a
// summary would say.
package tickets
