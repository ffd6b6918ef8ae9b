package devhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/local/blobwatch"
)

// watchBlobs runs a blobTrigger function on new and changed blobs. Locally
// there is no Event Grid, so the container scan stands in for the
// BlobCreated events too; what differs by source is how the invocation
// binds (see invokeBlob).
func (h *Host) watchBlobs(ctx context.Context, fn *Function) error {
	p, err := blobwatch.ParsePath(fn.Trigger().Path)
	if err != nil {
		return fmt.Errorf("blob trigger path: %w", err)
	}
	return h.blobs.Watch(ctx, fn.Name, p, func(ctx context.Context, b blobwatch.Blob) error {
		return h.invokeBlob(ctx, fn, b.Container, b.Name, b.Tokens, b.ETag)
	})
}

// invokeBlob binds and runs one blob trigger invocation as the extension
// does: Get Blob Properties first, which supplies Properties and Metadata;
// a blob that is gone is skipped (counted done). With the polling source a
// blob whose ETag is no longer the one found is skipped too, since the next
// scan finds the new version; the Event Grid source runs on whatever
// version is there. listedETag empty means "any version" (the admin API).
func (h *Host) invokeBlob(ctx context.Context, fn *Function, container, name string, tokens map[string]string, listedETag string) error {
	st, err := h.blobProperties(ctx, container, name)
	if errors.Is(err, errBlobGone) {
		h.record(Event{Kind: BlobSkipped, Function: fn.Name, Blob: container + "/" + name, ETag: listedETag, Reason: "the blob no longer exists"})
		return nil
	}
	if err != nil {
		return err
	}
	if listedETag != "" && !h.eventGrid(fn) && st.bareETag() != strings.Trim(listedETag, `"`) {
		h.record(Event{Kind: BlobSkipped, Function: fn.Name, Blob: container + "/" + name, ETag: listedETag, Reason: "the blob changed since it was found"})
		return nil
	}
	env, err := h.blobEnvelope(ctx, fn, container, name, tokens, st)
	if err != nil {
		return err
	}
	_, err = h.execute(ctx, fn, env, tokens, Event{Blob: container + "/" + name, ETag: st.bareETag()})
	return err
}

// eventGrid reports whether fn's blob trigger has the Event Grid source
// under the extension the dev host imitates (4.x has only polling).
func (h *Host) eventGrid(fn *Function) bool {
	return h.app.StorageExtension == StorageExtension5 && strings.EqualFold(fn.Trigger().Source, "EventGrid")
}

// deferred reports whether fn gets a deferred-binding descriptor instead of
// the content: supportsDeferredBinding under the 5.x extension.
func (h *Host) deferred(fn *Function) bool {
	return h.app.StorageExtension == StorageExtension5 && fn.Trigger().Properties.SupportsDeferredBinding
}

// blobEnvelope reads what the invocation needs (the content, unless the
// binding is deferred) and encodes it.
func (h *Host) blobEnvelope(ctx context.Context, fn *Function, container, name string, tokens map[string]string, st blobState) (envelope, error) {
	inv := blobInvocation{
		function: fn.Name, trigger: fn.Trigger(), extension: h.app.StorageExtension, deferred: h.deferred(fn),
		container: container, name: name, tokens: tokens, state: st,
		url: h.opts.blobs.ServiceClient().NewContainerClient(container).URL() + "/" + escapePath(name),
	}
	if !inv.deferred {
		var err error
		if inv.content, err = h.download(ctx, container, name); err != nil {
			return envelope{}, err
		}
	}
	return inv.envelope(h.opts.Now()), nil
}

// blobInvocation is everything a blob trigger envelope is made of.
type blobInvocation struct {
	function  string
	trigger   Binding
	extension StorageExtension
	deferred  bool
	container string
	name      string
	url       string
	tokens    map[string]string
	state     blobState
	content   []byte // unless deferred
}

// envelope encodes the invocation as the Storage extension passes it to a
// custom handler: Data holds the content (base64 for dataType binary, else
// a double-encoded string) or the deferred descriptor; Metadata holds Uri,
// the path's tokens (double-encoded strings), Properties in the
// extension's shape and the user metadata (a plain object).
func (b blobInvocation) envelope(now time.Time) envelope {
	env := newEnvelope(b.function, now)
	switch {
	case b.deferred:
		env.Data[b.trigger.Name] = deferredDescriptor(b.trigger.Connection, b.container, b.name)
	case strings.EqualFold(b.trigger.DataType, "binary"):
		env.Data[b.trigger.Name] = hostBytes(b.content)
	default:
		env.Data[b.trigger.Name] = hostString(string(b.content))
	}
	m := env.Metadata
	m["Uri"] = hostString(b.url)
	for k, v := range b.tokens {
		m[k] = hostString(v)
	}
	if b.extension == StorageExtension4 {
		m["Properties"] = properties4(b.state)
	} else {
		m["Properties"] = properties5(b.state)
	}
	meta := b.state.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	m["Metadata"] = mustJSON(meta)
	return env
}

func (h *Host) download(ctx context.Context, container, name string) ([]byte, error) {
	res, err := h.opts.blobs.DownloadStream(ctx, container, name, nil)
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
