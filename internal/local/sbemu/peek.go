package sbemu

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/queueerror"
)

// maxPeek is the most messages a storage peek returns.
const maxPeek = 32

// DeadLetters returns up to limit (at most 32) visible messages of the queue's
// dead-letter queue without locking or changing them, for tests and tools.
// The deliveries cannot be settled.
func (b *Broker) DeadLetters(ctx context.Context, queue string, limit int) ([]Delivery, error) {
	e, err := resolve(queue)
	if err != nil {
		return nil, err
	}
	e.dead = true
	if limit <= 0 {
		return nil, nil
	}
	resp, err := b.queues.NewQueueClient(e.dlq).PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: to.Ptr(int32(min(limit, maxPeek)))})
	if queueerror.HasCode(err, queueerror.QueueNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("peek dead letters of %q: %w", queue, err)
	}
	out := make([]Delivery, 0, len(resp.Messages))
	for _, m := range resp.Messages {
		text := deref(m.MessageText)
		w, env, bad, err := b.load(ctx, text)
		if err != nil {
			return nil, fmt.Errorf("peek dead letters of %q: %w", queue, err)
		}
		if bad != nil {
			env = &envelope{Body: []byte(text), MessageID: deref(m.MessageID), EnqueuedTime: deref(m.InsertionTime).UTC()}
			w.DeadLetter = &deadLetter{Reason: ReasonUndecodable, Description: bad.Error(), Source: e.name}
		}
		out = append(out, *delivery(env, w.DeadLetter, e.path(), int(deref(m.DequeueCount))))
	}
	return out, nil
}

// Count returns the approximate number of messages in the queue, locked ones
// included, and in its dead-letter queue. A queue never used counts 0.
func (b *Broker) Count(ctx context.Context, queue string) (active, deadLettered int, err error) {
	e, err := resolve(queue)
	if err != nil {
		return 0, 0, err
	}
	if active, err = b.count(ctx, e.active); err != nil {
		return 0, 0, fmt.Errorf("count %q: %w", queue, err)
	}
	if deadLettered, err = b.count(ctx, e.dlq); err != nil {
		return 0, 0, fmt.Errorf("count %q: %w", e.name+DeadLetterSuffix, err)
	}
	return active, deadLettered, nil
}

func (b *Broker) count(ctx context.Context, storageQueue string) (int, error) {
	resp, err := b.queues.NewQueueClient(storageQueue).GetProperties(ctx, nil)
	if queueerror.HasCode(err, queueerror.QueueNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return int(deref(resp.ApproximateMessagesCount)), nil
}
