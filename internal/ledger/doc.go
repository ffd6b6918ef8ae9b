// Package ledger is offpath's account of who spent what: one Entry per
// attributable unit of work (the model calls of one queue message; a batch
// job's usage per tenant, alias and deployment), summed into monthly
// reports and checked against monthly budgets.
//
// The ledger's promise is exactness. An entry's key is derived only from
// what identifies the unit — its path, the caller's unit key, the alias and
// the deployment — so a retry, a redelivery or a re-harvest writes the same
// row again instead of adding one; and its month comes from the unit (when
// the message was enqueued, when the batch job was created), never from the
// clock at write time, so a redelivery just after midnight on the first of
// the month still lands on the same row. Months are calendar months in UTC.
//
// Usage is the domain's token-usage type, with its arithmetic (Add, Sub,
// IsZero, TotalTokens, CostAt a catalog price): ledger rows, rollups and
// reports, the batch path's parts, jobs and fallbacks (package batch), the
// second-door audit (package audit) and the morning report (package
// report) carry it; the Global Batch output reader (package batchfile)
// reads its private wire format into it.
//
// The package is storage-free: package tablestore stores entries, and this
// package says what they mean.
package ledger
