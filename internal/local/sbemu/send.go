package sbemu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/queueerror"
)

// inlineMax is the largest storage message text sbemu writes with the
// envelope inline. Storage allows 64 KiB; the rest is headroom for the
// dead-letter record added when the message moves to the DLQ.
const inlineMax = 48 * 1024

// Send puts m on the queue, as a serviceBus output binding does. A message
// Service Bus would refuse is refused with ErrTooLarge or ErrInvalidMessage.
func (b *Broker) Send(ctx context.Context, queue string, m Message) error {
	e, err := resolve(queue)
	if err != nil {
		return err
	}
	if e.dead {
		return fmt.Errorf("%w: cannot send to dead-letter queue %q", ErrInvalidQueueName, queue)
	}
	if m.MessageID == "" {
		m.MessageID = newID()
	}
	if _, err := check(queue, &m); err != nil {
		return err
	}
	seq, err := b.nextSequence(ctx, e.name)
	if err != nil {
		return fmt.Errorf("send to %q: %w", queue, err)
	}
	now := b.now().UTC()
	env := &envelope{
		Body:                  m.Body,
		MessageID:             m.MessageID,
		CorrelationID:         m.CorrelationID,
		ContentType:           m.ContentType,
		Subject:               m.Subject,
		ApplicationProperties: m.ApplicationProperties,
		EnqueuedTime:          now,
		ExpiresAt:             now.Add(b.ttl),
		SequenceNumber:        seq,
	}
	if err := b.put(ctx, e.active, wire{Version: wireVersion, Message: env}); err != nil {
		return fmt.Errorf("send to %q: %w", queue, err)
	}
	return nil
}

// put writes w to a storage queue, moving its envelope to a blob when the
// text would not fit in a storage message. Storage messages never expire:
// the broker applies the TTL itself, so that it can delete the blob too.
func (b *Broker) put(ctx context.Context, queue string, w wire) error {
	text, err := marshalText(w)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	uploaded := ""
	if len(text) > inlineMax && w.Message != nil {
		data, err := marshalText(w.Message)
		if err != nil {
			return fmt.Errorf("encode message: %w", err)
		}
		if err := b.ensureContainer(ctx); err != nil {
			return err
		}
		name := "messages/" + queue + "/" + newID() + ".json"
		if _, err := b.blobs.UploadBuffer(ctx, b.container, name, data, nil); err != nil {
			b.forgetContainer(err)
			return fmt.Errorf("upload message blob %q: %w", name, err)
		}
		uploaded = name
		w.Message, w.Blob = nil, name
		if text, err = marshalText(w); err != nil {
			return fmt.Errorf("encode message: %w", err)
		}
	}
	if err := b.enqueue(ctx, queue, string(text)); err != nil {
		if uploaded != "" {
			b.deleteBlob(context.WithoutCancel(ctx), uploaded)
		}
		return err
	}
	return nil
}

// enqueue puts text on a storage queue, creating the queue if needed.
func (b *Broker) enqueue(ctx context.Context, queue, text string) error {
	if err := b.ensureQueue(ctx, queue); err != nil {
		return err
	}
	opts := &azqueue.EnqueueMessageOptions{TimeToLive: to.Ptr[int32](-1)}
	_, err := b.queues.NewQueueClient(queue).EnqueueMessage(ctx, text, opts)
	if queueerror.HasCode(err, queueerror.QueueNotFound) { // deleted behind our back
		b.forget(queue, err)
		if err := b.ensureQueue(ctx, queue); err != nil {
			return err
		}
		_, err = b.queues.NewQueueClient(queue).EnqueueMessage(ctx, text, opts)
	}
	if err != nil {
		return fmt.Errorf("enqueue on storage queue %q: %w", queue, err)
	}
	return nil
}

// deleteBlob removes a message blob; a failure only leaves garbage behind.
func (b *Broker) deleteBlob(ctx context.Context, name string) {
	if _, err := b.blobs.DeleteBlob(ctx, b.container, name, nil); err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound) {
		b.log.Warn().Err(err).Str("blob", name).Msg("sbemu: delete message blob")
	}
}

// nextSequence increments the queue's counter blob. The ETag condition makes
// it safe across brokers; the mutex avoids needless conflicts within one.
func (b *Broker) nextSequence(ctx context.Context, name string) (int64, error) {
	if err := b.ensureContainer(ctx); err != nil {
		return 0, err
	}
	b.sequences.Lock()
	defer b.sequences.Unlock()
	counter := "sequence/" + name
	client := b.blobs.ServiceClient().NewContainerClient(b.container).NewBlockBlobClient(counter)
	for range 100 {
		last, cond := int64(0), &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}
		resp, err := client.DownloadStream(ctx, nil)
		switch {
		case bloberror.HasCode(err, bloberror.BlobNotFound):
		case err != nil:
			b.forgetContainer(err)
			return 0, fmt.Errorf("read sequence counter %q: %w", counter, err)
		default:
			data, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				return 0, fmt.Errorf("read sequence counter %q: %w", counter, err)
			}
			if last, err = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err != nil {
				return 0, fmt.Errorf("sequence counter %q holds %q: %w", counter, data, err)
			}
			cond = &blob.ModifiedAccessConditions{IfMatch: resp.ETag}
		}
		next := strconv.FormatInt(last+1, 10)
		_, err = client.Upload(ctx, streaming.NopCloser(strings.NewReader(next)), &blockblob.UploadOptions{
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: cond},
		})
		if bloberror.HasCode(err, bloberror.ConditionNotMet, bloberror.BlobAlreadyExists) {
			continue // another broker won; read again
		}
		if err != nil {
			b.forgetContainer(err)
			return 0, fmt.Errorf("write sequence counter %q: %w", counter, err)
		}
		return last + 1, nil
	}
	return 0, errors.New("sequence counter: too many concurrent updates")
}
