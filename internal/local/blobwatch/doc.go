// Package blobwatch plays the Azure Functions host's blob trigger against
// Azurite, so that blob-triggered functions fire on a development machine the
// way they fire in Azure.
//
// The host's default ("LogsAndContainerScan") blob trigger lists containers,
// matches blob names against the trigger's path, and keeps a blob receipt per
// function and ETag in the "azure-webjobs-hosts" container, so that a blob is
// processed once per version: a blob that is overwritten gets a new ETag and
// fires again. A failing blob is retried, and after five failed tries the
// host gives up and writes a poison message to the "webjobs-blobtrigger-poison"
// queue. A Watcher does all of this with the same container, receipt names,
// metadata and poison message as the host, so what a developer sees in
// Azurite is what they would see in a storage account behind a real host.
//
// Differences from the host, all deliberate:
//
//   - The try count is kept in the receipt's metadata ("Tries"), where the
//     host counts the dequeues of an internal queue message; both survive a
//     restart. A poisoned receipt is marked "Poisoned" and never retried; the
//     host leaves it incomplete and may try again after a restart.
//   - A failed blob is retried on the next scan rather than after the host's
//     queue visibility timeout.
//   - Blobs are handled one at a time per function (the host runs up to
//     maxDegreeOfParallelism at once), and one process is assumed: receipts
//     are not leased, so two dev hosts on one Azurite could both fire a blob.
//   - There is no scan log and no "last scan" bookmark: every scan lists the
//     whole prefix. That is cheap on a developer's Azurite and means nothing
//     is missed across restarts.
package blobwatch
