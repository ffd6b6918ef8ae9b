// Package tablestore keeps offpath's records in Azure Table Storage
// (Azurite locally) through the aztables SDK: tenants, the ledger, batch
// jobs, document statuses, the nightly runs, the audit and the queue
// path's rate-limit leases. It is the only
// package that knows the tables' layout; everything else talks in the
// domain types of packages tenant, ledger, batch, document, nightly and
// audit, and SDK errors are
// translated here into those packages' sentinels (tenant.ErrNotFound,
// tenant.ErrConflict). Any other error is returned wrapped: callers treat
// it as transient, so a row that could not be written is retried, never
// silently lost.
//
// Layout:
//
//	offpathtenants  PartitionKey "tenants" (one partition, so that a tenant
//	                and its credential index change in one atomic
//	                transaction); RowKey "t:<tenant id>" for the tenant,
//	                "k:<key id>" for each API key and "a:<app id>" for each
//	                Entra application id. A credential row carries what
//	                authentication needs (tenant id, state, salted key
//	                hash), so authenticating is one point read.
//	                RowKey "e:credentials" is rewritten in every
//	                tenant-changing transaction: its ETag is the credential
//	                epoch instances poll to learn that a cached credential
//	                may be stale.
//	offpathledger   PartitionKey "<tenant id>|<YYYY-MM>", so that a tenant's
//	                month is one partition query; RowKey the entry's
//	                deterministic key (ledger.Entry.Key), so that writing
//	                the same unit again replaces its row. The month's
//	                rollups share its partition, RowKey
//	                "~u|<day>|<path>|<alias>|<deployment>", written in the
//	                same transactions as the rows (see rollups.go).
//	offpathbatchjobs batch jobs, idempotency keys and the poller's index
//	                (see DefaultJobsTable); offpathdocuments the queue
//	                path's document statuses (see documents.go).
//	offpathnights   PartitionKey "<tenant id>", RowKey "<yyyy-mm-dd>": one
//	                nightly run's record (see DefaultNightsTable).
//	offpathsummaries PartitionKey "<tenant id>", RowKey "<ticket id>": the
//	                hash of the version last submitted for summary.
//	offpathratelimits PartitionKey "<deployment>", RowKey "pool": the
//	                queue path's shared quota, every process's lease (see
//	                DefaultRateLimitsTable); ETag-guarded.
//	offpathaudit    PartitionKey "batch" or "file", RowKey the Azure id: what
//	                the second-door audit has alerted and booked, read a
//	                partition at a time (see DefaultAuditTable).
//
// Tables are created on first write (an existing table is fine).
package tablestore
