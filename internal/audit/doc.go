// Package audit is the second-door audit: offpath is the only door to the
// company's Azure OpenAI Global Batch, and this is how a second one is
// found. It runs on a timer (hourly); one Run lists every batch and every
// file on the resource, compares them with offpath's own records, raises
// an alert for anything offpath did not create, books the usage of batches
// offpath did not create to a tenant of their own, and deletes offpath's
// leftovers. It keeps no state in memory: what it has alerted and booked
// is in a Store (package tablestore's Audit).
//
// # Whose is it
//
// A batch offpath created carries its submission key in its metadata
// (offpath_job, offpath_part, offpath_attempt; see package batch), and
// it is offpath's only if its job claims it: the job's part names it (now
// or among its earlier attempts), or will (the part is not harvested, has
// recorded no other batch for the batch's attempt, and has not moved to a
// later one, so the poller adopts it by its key). A batch with the key and
// no such claim is an orphan: its job row was lost, or moved on without it.
// An input file offpath uploaded has purpose "batch" and is named
// {job}.part{N}.jsonl with a well-formed job id. The output and error
// files of a batch belong to that batch. Anything else is someone else's.
//
// # Alerts
//
// A batch without the key raises one "second_door" alert, once per batch
// ever: its id, created time, status, endpoint, input file (id, name and
// size in bytes, -1 when the file is gone), output and error file ids and
// Azure's request counts. A file that offpath did not upload and that no
// batch names (a batch listed now, or one alerted before) raises one
// "second_door" alert of its own, once per file: id, name, purpose, size
// and created time. So a batch created directly on its own input file is
// one alert, not two. A file younger than MinAge is not alerted yet: a
// batch may be about to be created on it. Alerts carry ids, times and
// counts, never prompt or answer text; nothing the audit logs does either.
//
// An orphan raises one "batch_orphaned" alert instead, with the same
// fields plus the job, part and attempt of its key and its tenant.
//
// The alert is raised first and then recorded. A crash (or a failed write)
// in between raises it again next run: at least once, never not at all.
//
// # Booking
//
// Once such a batch has ended (completed with its files, failed, expired
// or cancelled), its output and error files are read and every line is
// metered as the harvest meters offpath's own (batch.Meter): the
// lines Azure ran are requests with their usage, refusals are counted.
// The sum goes to the ledger under tenant "unattributed", path batch, unit
// "second-door:{batch id}" (so that booking again rewrites the same row),
// in the month the batch was created. An orphan's goes to the tenant its
// "tenant" metadata names, if that tenant exists (else "unattributed"),
// unit "orphan:{batch id}"; the tenant is decided and recorded before the
// first booking, so every booking writes the same row. An orphaned pack
// (metadata tenant "~pack": several tenants' small jobs in one batch, its
// own row gone) is split by line: each line's custom_id names its job,
// whose row outlives the pack's, so its usage goes to that job's tenant
// (one row per tenant, unit "orphan:{batch id}"), and the lines whose job
// is not found to "unattributed"; the record's note says how many lines
// of how many jobs went to each tenant and names the jobs not found. The deployment is the model named on
// the input file's first line; its alias is the first alias, by name,
// whose batch deployments include it, and the cost is that alias's batch
// price. A deployment the catalog does not know, or an input file that is
// gone, is booked as alias and deployment "unknown" at zero cost. An
// output or error file that is gone is noted in the record and a warning:
// its usage is unknown. Then the record is marked booked: the usage is
// booked once. A failure before the mark books again next run, into the
// same ledger row.
//
// The "unattributed" tenant is created when first needed, suspended and
// without keys, application ids or aliases, so that nobody can use it and
// the admin's usage report (GET /api/v1/usage?tenant=unattributed) shows
// it.
//
// # Leftovers
//
// Deleted, to keep the resource far from its file caps: the input, output
// and error files of offpath's ended batches, and offpath's input files,
// whose job is no longer active (in the poller's index: a job is active
// from before its first upload until it is harvested and its cleanup list
// is empty). Files and batches are listed first and the active jobs read
// after, so a job marked active after the read cannot own a file listed
// before it. Never deleted: a file a running batch names, a file a batch
// offpath did not create names, a file related to an active job, and a
// file younger than MinAge. If offpath's batches are running but the
// active index is empty, the index is not trusted and nothing is deleted.
// A failed delete is logged and tried again next run.
//
// # Failures
//
// A listing failure (files, batches, active jobs, the audit's records) is
// Run's error: nothing was done, and the timer's next firing starts over.
// A failure on one batch or file is logged, counted in the Summary, and
// retried next run; the run goes on. Each Run ends with one info log line,
// "event":"batch_audit", carrying the Summary's counts.
//
// The Functions timer runs one firing at a time. Two runs at once would
// at worst alert twice, and book twice into the same ledger row.
package audit
