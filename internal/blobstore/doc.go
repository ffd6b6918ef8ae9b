// Package blobstore is offpath's adapter to Azure Blob Storage (Azurite
// locally), the one place that calls the azblob SDK.
//
// [Store] holds files that are too large to hold in memory: batch inputs
// and their indexes, copies of Azure OpenAI output files, per-item results,
// reports. Every read and write streams: a [Writer] uploads blocks as it is
// written and commits them on Close, so a reader never sees half a file,
// and an aborted writer leaves nothing behind but uncommitted blocks, which
// the service discards. It also counts the bytes and computes their
// SHA-256. Memory per writer is bounded by its block buffers: the store's
// block size times its concurrency, or a block size of the writer's own
// (CreateSized) for a blob written alone and large.
//
// [Documents] is the queue path's side: it reads a dropped document as a
// stream, pinned to the version its claim check names (If-Match on the
// ETag), and writes the result for the search indexer so that it appears
// whole or not at all. A result is staged as blocks while it is produced
// and made visible by one commit; a result small enough for one block is
// uploaded in one request. It implements ingest.Blobs.
//
// [Container] lists and reads one container for the nightly ticket
// collector (tickets.Blobs).
//
// The values, the writer's interface and the error sentinels are package
// object's, so that the flows need neither this package nor the SDK. SDK
// errors are translated once, here: a missing blob or container is
// object.ErrNotFound, a blob no longer at the version asked for
// object.ErrChanged, a 409 object.ErrConflict; anything else is returned
// wrapped, and callers treat it as transient.
package blobstore
