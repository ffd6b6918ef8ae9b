package blobstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/offpath/offpath/internal/object"
)

// Writer streams one blob, an object.Writer: bytes written are uploaded as
// blocks, and Close commits them, so the blob appears whole or not at all.
// It also counts the bytes and computes their SHA-256, the checksum offpath
// keeps with every copied file. A Writer is not safe for concurrent use.
type Writer struct {
	pw     *io.PipeWriter
	done   chan struct{}
	err    error // the upload's result, set before done closes
	n      int64
	sum    hash.Hash
	closed bool
	once   sync.Once
	name   string
}

// Create starts writing the blob name in containerName (created if need
// be), replacing any blob of that name when Close commits. metadata, which
// may be nil, is stored with it.
func (s *Store) Create(ctx context.Context, containerName, name string, metadata map[string]string) (object.Writer, error) {
	return s.CreateSized(ctx, containerName, name, metadata, s.opts.BlockSize)
}

// CreateSized is Create with a block size of the writer's own, for a caller
// that knows better than the store's default what one writer may hold
// (blockSize × Concurrency) against how many requests it makes: a blob
// written alone and large takes bigger blocks than the store's writers,
// several of which may run at once. blockSize ≤ 0 means the store's.
func (s *Store) CreateSized(ctx context.Context, containerName, name string, metadata map[string]string, blockSize int64) (object.Writer, error) {
	if blockSize <= 0 {
		blockSize = s.opts.BlockSize
	}
	if err := s.ensure(ctx, containerName); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	w := &Writer{pw: pw, done: make(chan struct{}), sum: sha256.New(), name: containerName + "/" + name}
	md := make(map[string]*string, len(metadata))
	for k, v := range metadata {
		md[k] = &v
	}
	bb := s.blob(containerName, name)
	go func() {
		defer close(w.done)
		_, err := bb.UploadStream(ctx, pr, &blockblob.UploadStreamOptions{
			BlockSize: blockSize, Concurrency: s.opts.Concurrency, Metadata: md,
		})
		if err != nil {
			w.err = fmt.Errorf("upload blob %s: %w", w.name, translate(err))
		}
		// Unblock a writer still writing after a failed upload.
		pr.CloseWithError(errors.Join(w.err, errors.New("upload ended")))
	}()
	return w, nil
}

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, fmt.Errorf("write blob %s: closed", w.name)
	}
	n, err := w.pw.Write(p)
	w.n += int64(n)
	w.sum.Write(p[:n])
	if err != nil {
		<-w.done
		if w.err != nil {
			return n, w.err
		}
		return n, fmt.Errorf("write blob %s: %w", w.name, err)
	}
	return n, nil
}

// Close commits the blob and reports whether it was stored.
func (w *Writer) Close() error {
	w.once.Do(func() {
		w.closed = true
		_ = w.pw.Close()
		<-w.done
	})
	return w.err
}

// Abort stops the upload without committing: the blob is left as it was.
func (w *Writer) Abort(cause error) {
	w.once.Do(func() {
		w.closed = true
		if cause == nil {
			cause = errors.New("aborted")
		}
		_ = w.pw.CloseWithError(cause)
		<-w.done
	})
}

// Size is the number of bytes written.
func (w *Writer) Size() int64 { return w.n }

// SHA256 is the hex SHA-256 of the bytes written.
func (w *Writer) SHA256() string { return hex.EncodeToString(w.sum.Sum(nil)) }
