package blobwatch

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/queueerror"
)

// Names the host uses, kept identical so a real host and the dev host read
// each other's receipts and poison messages.
const (
	receiptContainer = "azure-webjobs-hosts"
	receiptDir       = "blobreceipts"
	poisonQueue      = "webjobs-blobtrigger-poison"

	// metaIncomplete marks a receipt whose blob has not been processed; the
	// host checks only that the key is present and sets it to its own name.
	metaIncomplete = "Incomplete"
	// metaTries and metaPoisoned are the dev host's own: failed tries so far,
	// and that the blob was given up on.
	metaTries    = "Tries"
	metaPoisoned = "Poisoned"
)

// storeTimeout bounds the receipt and poison writes that follow a handler
// call. They run even if the scan's context has ended meanwhile, so that a
// blob that was processed is not processed again after a shutdown.
const storeTimeout = 30 * time.Second

// receipt is the state of one blob version for one function.
type receipt struct {
	exists   bool
	complete bool
	poisoned bool
	tries    int
}

// functionID is the host's id for a function, as used in receipt paths and
// poison messages: script functions live on the type "Host.Functions".
func functionID(function string) string { return "Host.Functions." + function }

// receiptName follows the host's BlobReceiptManager:
// blobreceipts/{hostId}/{functionId}/{etag}/{container}/{blobName}. The ETag
// comes before the blob name because the name may contain slashes.
func (w *Watcher) receiptName(function string, b Blob) string {
	return strings.Join([]string{receiptDir, w.opts.HostID, functionID(function), bareETag(b.ETag), b.Container, b.Name}, "/")
}

func (w *Watcher) readReceipt(ctx context.Context, name string) (receipt, error) {
	props, err := w.blobs.ServiceClient().NewContainerClient(receiptContainer).NewBlobClient(name).GetProperties(ctx, nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return receipt{}, nil
	}
	if err != nil {
		return receipt{}, fmt.Errorf("read receipt %q: %w", name, err)
	}
	r := receipt{exists: true, complete: true}
	for k, v := range props.Metadata {
		switch {
		case strings.EqualFold(k, metaIncomplete):
			r.complete = false
		case strings.EqualFold(k, metaPoisoned):
			r.poisoned = true
		case strings.EqualFold(k, metaTries) && v != nil:
			r.tries, _ = strconv.Atoi(*v)
		}
	}
	return r, nil
}

// writeReceipt records r as the receipt's metadata, creating the receipt
// container on first use as the host does.
func (w *Watcher) writeReceipt(ctx context.Context, name string, r receipt) error {
	meta := map[string]*string{}
	if !r.complete {
		meta[metaIncomplete] = ptr(metaIncomplete)
	}
	if r.tries > 0 {
		meta[metaTries] = ptr(strconv.Itoa(r.tries))
	}
	if r.poisoned {
		meta[metaPoisoned] = ptr("true")
	}
	upload := func() error {
		_, err := w.blobs.UploadBuffer(ctx, receiptContainer, name, nil, &azblob.UploadBufferOptions{Metadata: meta})
		return err
	}
	err := upload()
	if bloberror.HasCode(err, bloberror.ContainerNotFound) {
		if _, cerr := w.blobs.CreateContainer(ctx, receiptContainer, nil); cerr != nil && !bloberror.HasCode(cerr, bloberror.ContainerAlreadyExists) {
			return fmt.Errorf("create container %q: %w", receiptContainer, cerr)
		}
		err = upload()
	}
	if err != nil {
		return fmt.Errorf("write receipt %q: %w", name, err)
	}
	return nil
}

// poisonMessage is the host's BlobTriggerMessage, field for field.
type poisonMessage struct {
	Type          string `json:"Type"`
	FunctionID    string `json:"FunctionId"`
	BlobType      string `json:"BlobType"`
	ContainerName string `json:"ContainerName"`
	BlobName      string `json:"BlobName"`
	ETag          string `json:"ETag"`
}

// poison writes the poison message for b. The text is base64, the storage
// queue extension's default messageEncoding, so a queue-triggered function on
// the poison queue decodes it as it would in Azure.
func (w *Watcher) poison(ctx context.Context, function string, b Blob) error {
	body, err := json.Marshal(poisonMessage{
		Type: "BlobTrigger", FunctionID: functionID(function), BlobType: b.Properties.BlobType,
		ContainerName: b.Container, BlobName: b.Name, ETag: bareETag(b.ETag),
	})
	if err != nil {
		return fmt.Errorf("encode poison message: %w", err)
	}
	q := w.queues.NewQueueClient(poisonQueue)
	enqueue := func() error {
		_, err := q.EnqueueMessage(ctx, base64.StdEncoding.EncodeToString(body), nil)
		return err
	}
	err = enqueue()
	if queueerror.HasCode(err, queueerror.QueueNotFound) {
		if _, cerr := q.Create(ctx, nil); cerr != nil && !queueerror.HasCode(cerr, queueerror.QueueAlreadyExists) {
			return fmt.Errorf("create queue %q: %w", poisonQueue, cerr)
		}
		err = enqueue()
	}
	if err != nil {
		return fmt.Errorf("enqueue poison message for %s/%s: %w", b.Container, b.Name, err)
	}
	return nil
}

// process handles one matching blob version: skip it if its receipt says
// done or poisoned, otherwise call handle and record the outcome.
func (w *Watcher) process(ctx context.Context, function string, b Blob, handle func(context.Context, Blob) error, stats *Stats) error {
	name := w.receiptName(function, b)
	r, err := w.readReceipt(ctx, name)
	if err != nil || r.exists && r.complete || r.poisoned {
		return err
	}
	b.Attempt = r.tries + 1
	log := w.opts.Logger.With().Str("function", function).Str("container", b.Container).
		Str("blob", b.Name).Str("etag", b.ETag).Int("attempt", b.Attempt).Logger()
	log.Debug().Msg("blob trigger fired")
	stats.Fired++
	herr := handle(ctx, b)
	if herr != nil && ctx.Err() != nil {
		// Cut off by shutdown: abandoned, not failed, so not counted.
		return fmt.Errorf("handle %s/%s: %w", b.Container, b.Name, errors.Join(ctx.Err(), herr))
	}

	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if herr == nil {
		stats.Succeeded++
		return w.writeReceipt(sctx, name, receipt{complete: true})
	}
	stats.Failed++
	r.tries++
	if r.tries < w.opts.MaxTries {
		log.Warn().Err(herr).Int("max_tries", w.opts.MaxTries).Msg("blob trigger failed; will retry")
		return w.writeReceipt(sctx, name, r)
	}
	log.Error().Err(herr).Str("queue", poisonQueue).Msg("blob trigger failed too often; poisoned")
	if err := w.poison(sctx, function, b); err != nil {
		return err
	}
	stats.Poisoned++
	r.poisoned = true
	return w.writeReceipt(sctx, name, r)
}

func ptr[T any](v T) *T { return &v }
