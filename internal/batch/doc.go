// Package batch is offpath's batch control plane: the only door to Azure
// OpenAI Global Batch. A tenant's request becomes a Job; the service writes
// its input, submits it when the deployment's enqueued-token quota allows,
// polls it, harvests its output into platform storage and attributes every
// token to the tenant in the ledger, exactly once. The package holds the
// job model and the flows; it talks to storage and Azure through the small
// interfaces in service.go (packages tablestore, blobstore and azopenai
// implement them). Azure's batch values as the control plane sees them —
// AzureBatch, AzureStatus, AzureFile, Submission, Created and the errors
// Azure answers with (ErrQuotaFull, ErrAmbiguous, ErrAzureAuth,
// ErrAzureNotFound, ErrAzureConflict) — are defined here (azure.go,
// azureerrors.go); the adapter imports this package, never the reverse.
//
// # States
//
//	accepted ─▶ held ─▶ submitted ─▶ completed | failed | expired | cancelled ─▶ harvested
//	   │          │                  (Azure: validating ▶ in_progress ▶ finalizing)
//	   └──────────┴─▶ cancelled (cancel before submission)
//
// A job has parts, one input file and one Azure batch each (files are split
// at Azure's 200 MB and 100,000 lines, and lowered so that a part fits its
// deployment's quota). The job's state is derived from its parts: accepted
// until the first admission attempt; held while parts wait for quota (or
// back off after Azure refused them); submitted while any part runs at
// Azure; then how it ended (failed or expired if a part did, cancelled if
// the tenant cancelled, else completed) until every part is harvested. A
// "completed" batch without an output file id is not final.
//
// # Submission
//
// Submit checks the tenant, the alias (allowed, with a Global Batch
// deployment), every item (id present, printable and unique, content
// present, sizes) and the budget (the input's enqueued-token estimate plus
// each item's max_tokens, or CompletionTokens), streaming the items into
// the parts' JSONL and index blobs as it goes; a request refused at any step
// leaves nothing behind. The job is recorded (with the tenant's idempotency
// key, atomically) as accepted; the poll tick submits it. Each line's
// custom_id is positional ({job}.{part}.{line}.{check}, see package
// batchfile), so every output line joins back to its tenant and item.
//
// # The poll tick
//
// Poll reads the index of active jobs and works on each, at most
// Concurrency at once; one job's failure never stops the others. Per job:
// requested cancellations are sent to Azure; submitted parts are polled, no
// more often than PollInterval and less often while their expected
// progress says their end is far off (cadence.go); ended parts are harvested; lingering
// conditions raise alerts. Then held parts are admitted.
//
// # Admission: quota, fairness, backoff
//
// Per deployment, the tokens of parts submitted and not yet ended are
// summed; a part is admitted only if it fits the quota (configured, or
// Azure's deployment-maximum-enqueued-tokens, whichever is lower). The next
// part always comes from the tenant with the fewest tokens in flight on
// that deployment; ties go to the tenant admitted least recently, then to
// the longest-waiting head; within a tenant, oldest job first. A tenant
// whose head does not fit is passed over (one tenant's huge corpus does not
// hold up another's nightly job), unless that head has waited longer than
// AgeLimit: then it reserves the deployment, so that big jobs are not
// starved by small ones. Azure's refusals (HTTP 400 token_limit_exceeded at
// create, or a batch failing validation with it) put the part back to held
// with exponential backoff and jitter (BackoffBase × 2^(n−1), at most
// BackoffMax, drawn from the upper half), keep its uploaded file, and close
// the deployment for the rest of the tick.
//
// # Several deployments
//
// An alias may have several batch deployments (package catalog). Each
// tick, a pending part is queued on the cheapest one it may use: in its
// job's data zone, and not cooling off (unless all are). Deployments are
// worked through cheapest first; a part left without headroom on one, or
// refused there by Azure, moves on to its next in the same tick (Part.
// Placement says why it is where it is). Its input names the deployment
// it was written for; a part moved elsewhere is uploaded again under
// {job}.part{N}.{deployment}.jsonl with the new name in every line, and
// its earlier file deleted unless a create may still use it. Batches carry
// the deployment in their metadata, so that a batch found by its
// submission key after a move says where it runs. A quota refusal, or
// CoolOffFailures failed creates in a row, cools a deployment off for
// CoolOff: this instance's own state, rebuilt by each instance from what
// Azure answers it.
//
// # Packing
//
// With PackOptions set, small jobs (at most MaxItems items and MaxTokens
// estimated tokens, one part, neither Urgent nor with a CompleteBy, whose
// fallback may need its batch cancelled) are packed across tenants into
// shared Azure batches. The packer runs in the poll tick before
// admission: it groups the small jobs by alias, data zone and deployment,
// oldest first; a group closes a pack whenever it reaches TargetLines
// lines (bounded like a part: Azure's lines and bytes, the deployment's
// quota, and MaxMembers jobs), and what is left waits until its oldest
// job has waited Window, then goes whole; a lone job is submitted alone.
// Until then admission passes the small jobs over.
//
// A pack is a row of its own (tenant PackTenant, which no tenant can
// be), listing its members; each member's part names the pack. It is
// admitted, placed, polled, cancelled and leased like any part, its
// submission key its own. Its file is its members' own inputs one after
// the other, unchanged: every line keeps its job's custom_id, so each
// output line names its job. The file is built when the pack's admission
// claims it; that claim seals the pack.
//
// Cancelling a member before the seal takes it out (a conditional write on
// the pack's row decides between the two): its lines are not in the file,
// it ends cancelled, nothing billed. So does cancelling it after the seal
// while the pack is held with nothing sent that could hold its lines (no
// create of unknown outcome, no admission under way, as after Azure's
// quota refused it): the pack is sized again and its file built and
// uploaded again without them, the earlier upload deleted. After the seal its lines stay and
// run (the batch is shared): what ran is billed, what did not is
// cancelled, and the job ends cancelled; a pack all of whose members are
// cancelled is cancelled at Azure.
//
// The harvest of a pack is split → deliver → delete → mark: Azure's files
// are read once and each member's lines stored as its own copies in its
// own results area; each member is handed its copies and the batch's end
// in one conditional write, as if its own batch had ended with them; then
// each member is harvested like any part (its index, results, counts and
// ledger row, LedgerUnit of the member), so its results, usage and ledger
// read as if it had run alone. Once every member's copies are stored the
// pack records it (Copied); a pack's harvest repeated after a crash reads
// those copies back, or, if the crash came before that record, splits
// again from Azure's files (deleted only once every member has its
// copies), and skips members already delivered; only the members' own
// harvests write the ledger. Get shows a packed job where its pack is
// (held, or submitted with the batch's status and times), never the
// pack's batch id, members or counts.
//
// # Exactly once
//
// Every change to a job is a conditional write on its ETag; a conflicting
// change is re-read and re-applied. Work with side effects outside the job
// row — upload and create, harvest — is done under a lease (owner, until)
// taken by such a write, so that two pollers never both do it; a crashed
// poller's lease runs out after LeaseTTL and the next poll takes over.
// Creates carry the submission key (job, part, attempt) in the batch's
// metadata, so a part never becomes two Azure jobs, whatever reply is lost
// (the create window):
//
//   - the claim marks the part MaybeCreated before anything is sent; an
//     admission after one that may have uploaded looks for the part's file
//     by name ({job}.part{N}.jsonl) and size before uploading again;
//   - the input file id is recorded on the part before the create is sent;
//   - every create looks its submission key up first (package azopenai;
//     the lookup stops at batches older than the job), so a create whose
//     reply was lost, or whose record failed, or a job row that storage
//     lost recent writes of, finds its batch: a batch found by its key is
//     the part's whatever input file it names; it is adopted, polled and
//     harvested, and the extra file is deleted.
//
// A batch with the key whose job row is gone altogether is found by the
// second-door audit (package audit) as an orphan, alerted and booked.
//
// The harvest of a part is copy → parse → ledger → delete → mark. The copy
// of the output and error files into the results container (with their
// SHA-256) is recorded before anything else; from then on only the copies
// are read, and their checksums verified. Parsing writes the per-item
// results file and sums usage; the part's ledger row has a key derived from
// the job and the part (LedgerUnit), so a harvest repeated after a crash
// anywhere before the mark rewrites the same row, never adds one. The mark
// (harvested, with counts and usage) ends it. Conservation holds for every
// part: items = ok + refused + failed + expired + cancelled, with items
// that no output mentions given the outcome the batch's end implies.
//
// # Deadlines
//
// A job may carry CompleteBy, when its answers are needed: at least
// MinCompleteBy (1 h) and at most MaxCompleteBy (7 days) after submission,
// for an alias with a queue deployment. Every tick checks each part not
// yet ended against it (Service.risk, deadline.go). With M the part's
// margin — CancelAllowance (15 min: Azure's cancelling takes up to 10) to
// cancel and harvest, plus its lines at FallbackRate (60) a minute — a
// part is at risk when it is still held, still validating, or running
// with no line done at CompleteBy − M − StartAllowance (30 min); when it
// has run SlowAfter (10 min) and its pace so far (lines done since
// submission) would finish it after CompleteBy − M; and in any case at
// CompleteBy − M. Then offpath stops waiting for it: a held part ends at
// once, a submitted one is cancelled at Azure and harvested as usual when
// it ends (its done lines billed at the batch price), and the part
// becomes "fallback". Its items the batch did not run (cancelled or
// expired) then go, in line order, FallbackConcurrency at a time and for
// at most FallbackSlice per tick, through Options.Sync: the queue path's
// synchronous client on the alias's queue deployment, paced by a
// ratelimit.Capped so that the fallback takes at most a quarter of the
// deployment's budget and document ingestion keeps the rest. Each answer
// is kept as a batch output line in {part}.sync.{line}.jsonl before its
// ledger row (path queue, the synchronous price, unit FallbackUnit: one
// per item) is written; Fallback.Done advances after each group. A run
// cut short anywhere resumes at Done and reads the kept answers instead of
// asking again, so an item is asked twice only if the process dies
// between Azure's answer and the keeping of it, and is never booked
// twice. When every item is answered, the part's results are its batch
// results with those items replaced (ResultLine.Source "sync"), each item
// once, and the part is harvested; the answers themselves, in line order,
// are kept as one file of batch output lines among the part's copies
// (FileCopy.Source "sync"), for a door that serves Azure's files; the
// per-item answers are then listed in the job's CleanupBlobs, and each
// tick's cleanup deletes them (the job stays active until it has). The fallback raises deadline_fallback
// and is counted by Options.Decisions (FallbackCounter); Part.Fallback
// says why it started, how many items came from each source and what the
// fallback used.
//
// # Alerts
//
// Raised through an Alerter as error log events with a stable "alert"
// field: batch_failed, batch_expired, batch_overdue, held_too_long,
// output_expiring_unharvested, output_lost, counts_mismatch,
// harvest_failing, azure_auth, deadline_fallback. Transitions alert once; lingering conditions
// at most once per Realert per job.
package batch
