package sbemu

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/queueerror"
)

// Complete removes a received message from its queue: the handler is done
// with it. It returns ErrLockLost if the lock expired or the delivery was
// already settled; the message will then be (or was) delivered again.
func (b *Broker) Complete(ctx context.Context, d *Delivery) error {
	ls, err := held(d)
	if err != nil {
		return fmt.Errorf("complete message %q: %w", d.MessageID, err)
	}
	defer ls.mu.Unlock()
	if err := b.deleteMessage(ctx, ls); err != nil {
		return fmt.Errorf("complete message %q on %q: %w", d.MessageID, d.Queue, err)
	}
	if ls.wire.Blob != "" {
		b.deleteBlob(ctx, ls.wire.Blob)
	}
	return nil
}

// Abandon releases the lock so that the message is delivered again at once,
// as the Functions host does when a handler fails. At DeliveryCount >=
// MaxDeliveryCount the message moves to the dead-letter queue instead, with
// reason MaxDeliveryCountExceeded; reason (the handler's error, say) goes into
// its DeadLetterErrorDescription. Messages in a dead-letter queue are never
// dead-lettered again. It returns ErrLockLost like Complete.
func (b *Broker) Abandon(ctx context.Context, d *Delivery, reason string) error {
	_, err := b.abandon(ctx, d, reason)
	return err
}

// abandon is Abandon, also reporting whether the message was dead-lettered.
func (b *Broker) abandon(ctx context.Context, d *Delivery, reason string) (deadLettered bool, err error) {
	ls, err := held(d)
	if err != nil {
		return false, fmt.Errorf("abandon message %q: %w", d.MessageID, err)
	}
	defer ls.mu.Unlock()
	if !ls.entity.dead && ls.dequeues >= b.maxCount {
		description := fmt.Sprintf("Message could not be consumed after %d delivery attempts.", ls.dequeues)
		if reason != "" {
			description += " Last error: " + reason
		}
		dl := deadLetter{Reason: ReasonMaxDeliveryCountExceeded, Description: description, Source: ls.entity.name, DeliveryCount: ls.dequeues}
		b.log.Warn().Str("queue", d.Queue).Str("message_id", d.MessageID).Int("delivery_count", ls.dequeues).
			Str("reason", dl.Reason).Msg("sbemu: dead-lettering a message")
		if err := b.moveToDeadLetter(ctx, ls, ls.wire, dl); err != nil {
			return false, fmt.Errorf("abandon message %q on %q: %w", d.MessageID, d.Queue, err)
		}
		return true, nil
	}
	if err := b.setVisibility(ctx, ls, 0); err != nil {
		return false, fmt.Errorf("abandon message %q on %q: %w", d.MessageID, d.Queue, err)
	}
	ls.settled = true
	return false, nil
}

// RenewLock extends the lock by LockDuration from now. It returns ErrLockLost
// if the lock already expired. A renewal cut off by ctx may have happened
// anyway, which loses the lock, so give it a context that does not end early.
func (b *Broker) RenewLock(ctx context.Context, d *Delivery) error {
	ls, err := held(d)
	if err != nil {
		return fmt.Errorf("renew lock of message %q: %w", d.MessageID, err)
	}
	defer ls.mu.Unlock()
	if err := b.setVisibility(ctx, ls, b.lock); err != nil {
		return fmt.Errorf("renew lock of message %q on %q: %w", d.MessageID, d.Queue, err)
	}
	return nil
}

// held locks d's state and checks that d still holds its lock. On success the
// caller must unlock ls.mu.
func held(d *Delivery) (*lockState, error) {
	if d == nil || d.lock == nil {
		return nil, errors.New("sbemu: not a received message")
	}
	ls := d.lock
	ls.mu.Lock()
	if ls.settled || !time.Now().Before(ls.until) {
		ls.mu.Unlock()
		return nil, ErrLockLost
	}
	return ls, nil
}

// setVisibility makes a locked message visible after vt, keeping its text.
// The caller holds ls.mu.
func (b *Broker) setVisibility(ctx context.Context, ls *lockState, vt time.Duration) error {
	start := time.Now()
	client := b.queues.NewQueueClient(ls.entity.storage())
	resp, err := client.UpdateMessage(ctx, ls.storageID, ls.popReceipt, ls.text,
		&azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr(int32(vt / time.Second))})
	if err != nil {
		return storageLockError(err)
	}
	ls.popReceipt = deref(resp.PopReceipt)
	ls.until = start.Add(vt)
	return nil
}

// release makes a message visible again after a failure that is not the
// message's fault. Best effort: otherwise its lock simply expires.
func (b *Broker) release(ctx context.Context, ls *lockState) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if err := b.setVisibility(context.WithoutCancel(ctx), ls, 0); err != nil {
		b.log.Warn().Err(err).Str("queue", ls.entity.path()).Msg("sbemu: release message")
	}
}

// deleteMessage removes a locked storage message. The caller holds ls.mu.
func (b *Broker) deleteMessage(ctx context.Context, ls *lockState) error {
	client := b.queues.NewQueueClient(ls.entity.storage())
	if _, err := client.DeleteMessage(ctx, ls.storageID, ls.popReceipt, nil); err != nil {
		return storageLockError(err)
	}
	ls.settled = true
	return nil
}

// moveToDeadLetter puts the message on the dead-letter queue, then removes it
// from its queue: a crash in between duplicates the message rather than
// losing it. The caller holds ls.mu.
func (b *Broker) moveToDeadLetter(ctx context.Context, ls *lockState, w wire, dl deadLetter) error {
	dl.Description = truncate(dl.Description, maxDescription)
	dl.Time = time.Now().UTC()
	w.Version, w.DeadLetter = wireVersion, &dl
	if err := b.put(ctx, ls.entity.dlq, w); err != nil {
		return fmt.Errorf("dead-letter: %w", err)
	}
	if err := b.deleteMessage(ctx, ls); err != nil {
		return fmt.Errorf("dead-letter: remove from %q after copying to its dead-letter queue: %w", ls.entity.path(), err)
	}
	return nil
}

// storageLockError maps the storage errors of a stale pop receipt to ErrLockLost.
func storageLockError(err error) error {
	if queueerror.HasCode(err, queueerror.MessageNotFound, queueerror.PopReceiptMismatch) {
		return fmt.Errorf("%w: %w", ErrLockLost, err)
	}
	return err
}
