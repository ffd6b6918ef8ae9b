package main

import (
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/config"
	"github.com/offpath/offpath/internal/openaiapi"
)

// doorBlockSize is the block size of the door's uploads: two writers per
// upload (the bytes sent and the items) stay within a few MiB each.
const doorBlockSize = 1 << 20

// newOpenAIDoor builds the OpenAI-compatible door over the batch control
// plane; without the batch path it answers 503.
func newOpenAIDoor(cfg config.Handler, t tenancy, b *batchPath) *openaiapi.Server {
	o := openaiapi.Options{Auth: t.auth, Tenants: t.tenants, Catalog: cfg.Catalog}
	if b != nil {
		o.Batches = b.svc
		o.Blobs = blobstore.New(b.blobs, blobstore.Options{BlockSize: doorBlockSize})
	}
	return openaiapi.New(o)
}
