package devhost

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/offpath/offpath/internal/blobwatch"
)

// watchBlobs runs a blobTrigger function on new and changed blobs. Locally
// there is no Event Grid, so a trigger with source EventGrid is served by the
// same container scan; the envelope the handler sees is the same.
func (h *Host) watchBlobs(ctx context.Context, fn *Function) error {
	p, err := blobwatch.ParsePath(fn.Trigger().Path)
	if err != nil {
		return fmt.Errorf("blob trigger path: %w", err)
	}
	return h.blobs.Watch(ctx, fn.Name, p, func(ctx context.Context, b blobwatch.Blob) error {
		env, err := h.blobEnvelope(ctx, fn, b)
		if err != nil {
			return err
		}
		_, err = h.execute(ctx, fn, env, b.Tokens)
		return err
	})
}

// blobEnvelope encodes a blob as the Storage Blobs extension 5.x binding data
// reaches a custom handler (shared/reference §3.4): the whole content inline
// (base64 for dataType binary), or a descriptor with supportsDeferredBinding.
func (h *Host) blobEnvelope(ctx context.Context, fn *Function, b blobwatch.Blob) (envelope, error) {
	t := fn.Trigger()
	env := newEnvelope(fn.Name, h.opts.Now())
	props := b.Properties
	if t.Properties.SupportsDeferredBinding {
		env.Data[t.Name] = mustJSON(map[string]any{
			"Source": "AzureStorageBlobs", "Version": "1.0", "ContentType": "application/json",
			"Content": map[string]any{"IsEmpty": props.ContentLength == 0, "Length": props.ContentLength, "MediaType": props.ContentType},
		})
	} else {
		content, err := h.download(ctx, b.Container, b.Name)
		if err != nil {
			return env, err
		}
		if strings.EqualFold(t.DataType, "binary") {
			env.Data[t.Name] = hostBytes(content)
		} else {
			env.Data[t.Name] = hostString(string(content))
		}
	}
	m := env.Metadata
	m["Uri"] = hostString(b.URL)
	for k, v := range b.Tokens {
		m[k] = hostString(v)
	}
	m["Properties"] = mustJSON(map[string]any{
		"BlobType": props.BlobType, "ContentLength": props.ContentLength, "ContentType": props.ContentType,
		"ContentEncoding": props.ContentEncoding, "ETag": `"` + b.ETag + `"`,
		"LastModified": props.LastModified.UTC().Format("2006-01-02T15:04:05") + "+00:00",
		"CreatedOn":    props.CreatedOn.UTC().Format("2006-01-02T15:04:05") + "+00:00",
	})
	meta := b.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	m["Metadata"] = mustJSON(meta)
	return env, nil
}

func (h *Host) download(ctx context.Context, container, name string) ([]byte, error) {
	res, err := h.opts.Blobs.DownloadStream(ctx, container, name, nil)
	if err != nil {
		return nil, fmt.Errorf("read blob %s/%s: %w", container, name, err)
	}
	defer res.Body.Close()
	content, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("read blob %s/%s: %w", container, name, err)
	}
	return content, nil
}
