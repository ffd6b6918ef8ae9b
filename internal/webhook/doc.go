// Package webhook tells tenants when their batch jobs end, or wait long
// for quota: signed HTTP POSTs to an endpoint the tenant registered (admin
// API, operator CLI), as the Standard Webhooks specification describes
// them: webhook-id, webhook-timestamp and webhook-signature ("v1," and
// the base64 HMAC-SHA256 of "{id}.{timestamp}.{body}" under the whsec_
// secret, shown once when the endpoint is registered).
//
// The Dispatcher runs in its own timer function, never in the batch poll
// tick. Each run looks at the recent jobs (ScanWindow) of every tenant
// with an endpoint, created since it registered, and records one event per
// job and type: batch.completed, batch.failed, batch.expired and
// batch.cancelled once the job is harvested, batch.fallback once a part
// has given up its batch for the job's complete_by (its remaining items run
// synchronously), batch.held once it has been held for HeldAfter. The event id is derived from the job and the type,
// so a repeated run records nothing new and a receiver can deduplicate.
// The ending and held events do not depend on the scan: the batch control
// plane hands each job to the Announcer as it becomes harvested, as it
// raises held_too_long for it and as a part's fallback starts, however long ago it was made, and the
// Announcer records the event (batch.held once the job has been held for
// DefaultHeldAfter; if that write fails the tick goes on all the same, and
// only the scan can find the job).
// Then it delivers the due events: at least once, a 2xx ends it; a
// failure is retried after DefaultBackoff's waits and the event abandoned
// after the last; each attempt (time, status, error, duration) is recorded
// with the event. Payloads carry the job's state, counts and usage, never
// prompts or answers.
package webhook
