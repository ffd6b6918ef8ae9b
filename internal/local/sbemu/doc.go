// Package sbemu is a durable, at-least-once stand-in for Azure Service Bus
// queues, for the dev host. Neither the Functions host nor Service Bus runs on
// a development machine, yet ingest-process depends on Service Bus behaviour:
// a failed invocation is redelivered with DeliveryCount+1, a lock that runs
// out makes the message visible again, and after MaxDeliveryCount attempts
// the message lands in the dead-letter queue. An in-memory queue would hide
// exactly the bugs that only show up on redelivery or after a restart, so
// sbemu keeps everything in Azurite and implements PeekLock on top of
// Storage Queues.
//
// # Mapping
//
// A Service Bus queue "doc-ingest" is the storage queue "sb-doc-ingest"; its
// dead-letter queue ("doc-ingest/$DeadLetterQueue") is "sbdlq-doc-ingest".
// The two prefixes differ so that no queue name can collide with another
// queue's dead-letter queue. Service Bus names are case-insensitive and are
// lowercased; a name that still is not lowercase letters, digits and single
// hyphens, or is longer than 57 characters, is refused with
// [ErrInvalidQueueName]. Queues are created on first use.
//
// Each storage message holds a small JSON document. The message itself (body,
// MessageId, CorrelationId, ContentType, Subject, ApplicationProperties,
// EnqueuedTime, ExpiresAt, SequenceNumber) is inline when it fits, or in the
// blob container Options.Container (default "devhost-servicebus") with a
// reference in the queue when it does not: a storage message holds at most
// 64 KiB and the body is base64 inside it. Sequence numbers come from a
// counter blob per queue, updated with ETag checks, so they keep increasing
// across restarts and across brokers sharing one Azurite.
//
// PeekLock is a dequeue with the lock duration as visibility timeout.
// DeliveryCount is the storage DequeueCount. [Broker.Complete] deletes the
// storage message, [Broker.Abandon] makes it visible at once, and
// [Broker.RenewLock] extends its invisibility. A message is dead-lettered with
// reason [ReasonMaxDeliveryCountExceeded] when it is abandoned at
// DeliveryCount >= MaxDeliveryCount, or when it is received with a
// DeliveryCount above MaxDeliveryCount (its locks expired because the
// consumer died). A storage message that sbemu cannot decode is dead-lettered
// with reason [ReasonUndecodable] and its raw text as the body. Expired
// messages (past their TTL) are dropped when they are found, as Service Bus
// does by default. Dead-lettered messages do not expire.
//
// Send enforces Service Bus Standard's size limits (256 KiB per message,
// 64 KiB for all properties, 32 KiB per property) and returns [ErrTooLarge]
// with the limit and the sizes, as an oversized message is refused by the
// real service rather than truncated.
//
// [Broker.Process] is the receive loop the Functions host runs for a
// serviceBusTrigger: up to maxConcurrentCalls handlers in flight, the lock
// renewed while a handler runs (up to maxAutoLockRenewalDuration), Complete
// on success and Abandon on error or panic.
//
// # Approximations
//
// Storage visibility timeouts are whole seconds, so lock durations are
// rounded up to a second. Messages are delivered in roughly FIFO order; an
// abandoned message goes to the back. Sizes count the body plus the UTF-8
// length of every property name and value (8 bytes for numbers, 1 for bools)
// plus 64 bytes for the broker's own system properties; the AMQP encoding the
// real service measures differs by a few bytes per property. Azurite saves
// its queue metadata every 5 seconds and on a clean shutdown, so a killed
// (not stopped) Azurite can forget the last seconds of activity.
package sbemu
