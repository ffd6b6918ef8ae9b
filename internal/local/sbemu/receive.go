package sbemu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
)

// Receive locks the next message of queue for LockDuration and returns it, or
// returns (nil, nil) when no message is visible. The queue may name a
// dead-letter queue ("doc-ingest/$DeadLetterQueue"). On the way it drops
// expired messages and dead-letters messages past MaxDeliveryCount and
// messages it cannot decode. The caller must Complete or Abandon the
// delivery, or let its lock expire.
func (b *Broker) Receive(ctx context.Context, queue string) (*Delivery, error) {
	e, err := resolve(queue)
	if err != nil {
		return nil, err
	}
	if err := b.ensureQueue(ctx, e.storage()); err != nil {
		return nil, fmt.Errorf("receive from %q: %w", queue, err)
	}
	client := b.queues.NewQueueClient(e.storage())
	opts := &azqueue.DequeueMessageOptions{VisibilityTimeout: to.Ptr(int32(b.lock / time.Second))}
	for {
		start := time.Now()
		resp, err := client.DequeueMessage(ctx, opts)
		if err != nil {
			b.forget(e.storage(), err)
			return nil, fmt.Errorf("receive from %q: %w", queue, err)
		}
		if len(resp.Messages) == 0 {
			return nil, nil
		}
		d, err := b.accept(ctx, e, resp.Messages[0], start.Add(b.lock))
		if errors.Is(err, ErrLockLost) {
			continue // it took too long to drop or dead-letter; whoever has it now will
		}
		if err != nil {
			return nil, fmt.Errorf("receive from %q: %w", queue, err)
		}
		if d != nil {
			return d, nil
		}
		// Dropped or dead-lettered: look at the next one.
	}
}

// accept turns a dequeued storage message into a delivery, or settles it
// itself and returns nil.
func (b *Broker) accept(ctx context.Context, e entity, m *azqueue.DequeuedMessage, until time.Time) (*Delivery, error) {
	ls := &lockState{
		entity:     e,
		storageID:  deref(m.MessageID),
		text:       deref(m.MessageText),
		dequeues:   int(deref(m.DequeueCount)),
		popReceipt: deref(m.PopReceipt),
		until:      until,
	}
	w, env, bad, err := b.load(ctx, ls.text)
	if err != nil {
		b.release(ctx, ls) // not the message's fault: don't let it cost a delivery's lock time
		return nil, err
	}
	log := b.log.With().Str("queue", e.path()).Str("storage_id", ls.storageID).Int("delivery_count", ls.dequeues).Logger()
	if bad != nil {
		env = &envelope{Body: []byte(ls.text), MessageID: ls.storageID, EnqueuedTime: deref(m.InsertionTime).UTC()}
		dl := deadLetter{Reason: ReasonUndecodable, Description: bad.Error(), Source: e.name, DeliveryCount: ls.dequeues - 1}
		if !e.dead {
			log.Warn().Str("reason", dl.Reason).Str("description", dl.Description).Msg("sbemu: dead-lettering a message")
			return nil, b.moveToDeadLetter(ctx, ls, wire{Version: wireVersion, Message: env}, dl)
		}
		dl.DeliveryCount = 0
		w = wire{DeadLetter: &dl} // deliver it from the DLQ as it is
	}
	if !e.dead && b.now().After(env.ExpiresAt) {
		log.Info().Str("message_id", env.MessageID).Time("expires_at", env.ExpiresAt).Msg("sbemu: dropping an expired message")
		ls.mu.Lock()
		defer ls.mu.Unlock()
		if err := b.deleteMessage(ctx, ls); err != nil {
			return nil, fmt.Errorf("drop expired message %q: %w", env.MessageID, err)
		}
		if w.Blob != "" {
			b.deleteBlob(ctx, w.Blob)
		}
		return nil, nil
	}
	if !e.dead && ls.dequeues > b.maxCount {
		// Its locks expired MaxDeliveryCount times: the consumer died or hung.
		dl := deadLetter{
			Reason:        ReasonMaxDeliveryCountExceeded,
			Description:   fmt.Sprintf("Message could not be consumed after %d delivery attempts.", ls.dequeues-1),
			Source:        e.name,
			DeliveryCount: ls.dequeues - 1,
		}
		log.Warn().Str("message_id", env.MessageID).Str("reason", dl.Reason).Msg("sbemu: dead-lettering a message")
		return nil, b.moveToDeadLetter(ctx, ls, w, dl)
	}
	ls.wire = w
	d := delivery(env, w.DeadLetter, e.path(), ls.dequeues)
	d.LockToken = newID()
	d.lock = ls
	return d, nil
}

// load decodes a storage message, fetching its envelope from the blob
// container if needed. bad reports a message that will never decode; err a
// failure that may pass.
func (b *Broker) load(ctx context.Context, text string) (w wire, env *envelope, bad, err error) {
	w, bad = decodeWire(text)
	if bad != nil {
		return wire{}, nil, bad, nil
	}
	if w.Message != nil {
		return w, w.Message, nil, nil
	}
	resp, err := b.blobs.DownloadStream(ctx, b.container, w.Blob, nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return wire{}, nil, fmt.Errorf("message blob %q is gone", w.Blob), nil
	}
	if err != nil {
		return wire{}, nil, nil, fmt.Errorf("download message blob %q: %w", w.Blob, err)
	}
	defer func() { _ = resp.Body.Close() }()
	var data []byte
	if data, err = io.ReadAll(resp.Body); err != nil {
		return wire{}, nil, nil, fmt.Errorf("download message blob %q: %w", w.Blob, err)
	}
	if env, bad = decodeEnvelope(data); bad != nil {
		return wire{}, nil, fmt.Errorf("message blob %q: %w", w.Blob, bad), nil
	}
	return w, env, nil, nil
}
