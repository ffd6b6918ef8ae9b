// Package object is what the flows know of stored objects (blobs): how a
// stored object is described, the errors a store's calls wrap, and the
// writer a large file is streamed through. The Blob Storage adapter
// (package blobstore) implements these and translates its SDK's errors to
// the sentinels here, so that flows test errors and read descriptions
// without depending on the adapter or the SDK.
package object

import (
	"errors"
	"io"
)

// Errors a store's calls wrap; test them with errors.Is.
var (
	// ErrNotFound: no such object (or container).
	ErrNotFound = errors.New("blob not found")
	// ErrChanged: the object is no longer the version asked for (a
	// condition on its ETag did not hold).
	ErrChanged = errors.New("blob changed")
	// ErrConflict: the object is in a state that refuses the operation.
	ErrConflict = errors.New("blob conflict")
)

// Info describes a stored object.
type Info struct {
	Size int64
	// ETag is the object's version, without quotes.
	ETag        string
	ContentType string
	// Metadata keys are lower case (the service returns them as HTTP
	// headers, in any case).
	Metadata map[string]string
}

// Entry is one object of a listing.
type Entry struct {
	Name string
	Size int64
}

// Writer streams one object: it appears whole when Close commits it, or
// not at all. It counts the bytes and computes their SHA-256, the checksum
// kept with every copied file. A Writer is not safe for concurrent use.
type Writer interface {
	io.Writer
	// Close commits the object and reports whether it was stored.
	Close() error
	// Abort stops without committing: the object is left as it was.
	Abort(cause error)
	// Size is the number of bytes written.
	Size() int64
	// SHA256 is the hex SHA-256 of the bytes written.
	SHA256() string
}
