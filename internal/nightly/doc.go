// Package nightly runs the platform's own scheduled batch work: the nightly
// ticket summaries and the morning report. It submits through the same
// control plane as any tenant (package batch), for the support tenant, so
// the job obeys every rule of the door: quota hold, attribution, harvest,
// alerts.
//
// # The night
//
// A night is named by the day whose tickets it summarises: the UTC calendar
// date before the moment the timer fires ([DayOf]), so a run at 01:00 UTC on
// the 15th collects the folder "2026-03-14/" of the tickets container (see
// package tickets for the layout and schema). [Service.Run] for a day:
//
//  1. returns at once if the day has a record already (a second firing, a
//     retry, a catch-up run: nothing is collected twice), repairing what a
//     crash may have left undone;
//  2. returns the job if the control plane has one under the day's
//     idempotency key (the record was lost in a crash after the submit);
//  3. streams the day's tickets, looking up a few hundred at a time in the
//     summaries record (point reads: the record grows with every ticket ever
//     summarised), and writes the new and changed ones into a corpus in the
//     support tenant's area of the uploads container, with a small index
//     (id, subject, customer, hash; no text) and a manifest (counts and
//     skipped documents) beside it;
//  4. submits the corpus as one job with the day's idempotency key: two
//     runs racing for the same day make one job, the loser deletes its
//     files;
//  5. records the day (job, index, manifest), then the hashes of the
//     tickets submitted, so a ticket is sent again only when its subject or
//     body changes. Hashes are recorded at submission, not at harvest: a
//     re-run while the job is still running sends nothing twice.
//
// A day with no new tickets makes no job; its report is written at once.
// A day is collected once: tickets dropped into its folder after its run
// are not read (the support system writes into the current day's folder;
// a ticket changed later is collected on the day it is exported again).
//
// # The morning report
//
// [Service.WriteReports] runs after every poll tick: for each recorded day
// whose job has been harvested and whose report is not written yet, it
// joins the job's results with the index (in submission order), the
// manifest's skipped documents and the ledger rows of the job's parts (so
// cost and tokens are exactly what the ledger says), and writes the report
// (package report) as reports/{yyyy-mm-dd}.html and .md. It then logs the
// event "morning_report_written", which the infrastructure's alert rules
// watch for.
//
// # The deadline
//
// [Service.CheckDeadline] runs at the configured deadline (a second timer):
// if the day's report is not written, it raises morning_report_missing,
// naming the job and the state it is stuck in (held for quota, running at
// Azure with its line counts, harvest pending), or saying that no job was
// submitted at all. The first person to notice is the operator, not the
// reader.
package nightly
