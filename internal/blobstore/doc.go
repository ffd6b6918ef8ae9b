// Package blobstore is offpath's adapter to Azure Blob Storage (Azurite
// locally) for files that are too large to hold in memory: batch inputs and
// their indexes, copies of Azure OpenAI output files, per-item results.
// Every read and write streams: a writer uploads blocks as it is written
// and commits them on Close, so a reader never sees half a file, and an
// aborted writer leaves nothing behind but uncommitted blocks, which the
// service discards. Memory per writer is bounded by its block buffers.
//
// SDK errors are translated once, here: a missing blob or container is
// ErrNotFound, a failed precondition ErrConflict; anything else is returned
// wrapped, and callers treat it as transient.
package blobstore
