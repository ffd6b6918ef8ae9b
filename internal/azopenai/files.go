package azopenai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/outcome"
)

// fromSDKFile reads a file's metadata off the wire.
func fromSDKFile(fo *openai.FileObject) batch.AzureFile {
	f := batch.AzureFile{ID: fo.ID, Filename: fo.Filename, Purpose: string(fo.Purpose), Status: string(fo.Status), Bytes: fo.Bytes,
		CreatedAt: unixOrISO(fo.CreatedAt, fo.JSON.CreatedAt), ExpiresAt: unixOrISO(fo.ExpiresAt, fo.JSON.ExpiresAt)}
	return f
}

// GetFile returns a file's metadata.
func (c *BatchClient) GetFile(ctx context.Context, id string) (batch.AzureFile, error) {
	var f batch.AzureFile
	err := c.retry(ctx, "get file "+id, func(ctx context.Context) error {
		fo, err := c.oai.Files.Get(ctx, id)
		if err == nil {
			f = fromSDKFile(fo)
		}
		return err
	})
	return f, err
}

// AwaitFile polls a new file every interval until it is processed. Older
// Azure versions answer an upload with "pending"; a batch created before
// "processed" is refused. A file in status "error" is rejected.
func (c *BatchClient) AwaitFile(ctx context.Context, id string, interval time.Duration) (batch.AzureFile, error) {
	for {
		f, err := c.GetFile(ctx, id)
		if err != nil {
			return batch.AzureFile{}, err
		}
		switch f.Status {
		case "processed", "":
			return f, nil
		case "error":
			return f, outcome.Reject("azure: input file processing failed", fmt.Errorf("file %s: status error", id))
		}
		if err := sleep(ctx, interval); err != nil {
			return batch.AzureFile{}, fmt.Errorf("await file %s: %w", id, err)
		}
	}
}

// OpenFileContent streams a file's content (an output or error file). The
// body is not buffered; the caller reads it and must close it. The request
// timeout covers the wait for the response headers only.
func (c *BatchClient) OpenFileContent(ctx context.Context, id string) (io.ReadCloser, error) {
	var body io.ReadCloser
	err := c.retry(ctx, "open file content "+id, func(context.Context) error {
		// Not retry's attempt context, which ends with this function: the
		// stream gets its own, a child of the caller's, released on Close.
		sctx, keep, cancel := attemptContext(ctx, c.cfg.RequestTimeout)
		resp, err := c.oai.Files.Content(sctx, id)
		if err == nil && !keep() {
			_ = resp.Body.Close()
			err = context.Canceled
		}
		if err != nil {
			if cause := context.Cause(sctx); errors.Is(cause, context.DeadlineExceeded) {
				err = cause
			}
			cancel()
			return err
		}
		body = &streamBody{ReadCloser: resp.Body, release: cancel}
		return nil
	})
	return body, err
}

type streamBody struct {
	io.ReadCloser
	release func()
}

func (s *streamBody) Close() error {
	err := s.ReadCloser.Close()
	s.release()
	return err
}

// DeleteFile deletes a file. Deleting a file that is already gone returns
// an error wrapping batch.ErrAzureNotFound, which callers cleaning up may ignore.
func (c *BatchClient) DeleteFile(ctx context.Context, id string) error {
	return c.retry(ctx, "delete file "+id, func(ctx context.Context) error {
		_, err := c.oai.Files.Delete(ctx, id)
		return err
	})
}

// ListFiles yields every file with the given purpose ("" for all), page by
// page, each page retried as an idempotent call. Stop early by breaking out
// of the loop.
func (c *BatchClient) ListFiles(ctx context.Context, purpose string) iter.Seq2[batch.AzureFile, error] {
	return func(yield func(batch.AzureFile, error) bool) {
		after := ""
		for {
			params := openai.FileListParams{Limit: openai.Int(int64(c.cfg.ListPageSize))}
			if purpose != "" {
				params.Purpose = openai.String(purpose)
			}
			if after != "" {
				params.After = openai.String(after)
			}
			var page []openai.FileObject
			var more bool
			err := c.retry(ctx, "list files", func(ctx context.Context) error {
				p, err := c.oai.Files.List(ctx, params)
				if err == nil {
					page, more = p.Data, p.HasMore
				}
				return err
			})
			if err != nil {
				yield(batch.AzureFile{}, err)
				return
			}
			for i := range page {
				if !yield(fromSDKFile(&page[i]), nil) {
					return
				}
			}
			if !more || len(page) == 0 {
				return
			}
			after = page[len(page)-1].ID
		}
	}
}

// FindFile returns the newest batch input file named filename, to resolve
// an upload whose outcome is unknown.
func (c *BatchClient) FindFile(ctx context.Context, filename string) (batch.AzureFile, bool, error) {
	var found batch.AzureFile
	for f, err := range c.ListFiles(ctx, "batch") {
		if err != nil {
			return batch.AzureFile{}, false, err
		}
		if f.Filename == safeFilename(filename) && (found.ID == "" || f.CreatedAt.After(found.CreatedAt)) {
			found = f
		}
	}
	return found, found.ID != "", nil
}
