package sbemu

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/queueerror"
	"github.com/rs/zerolog"
)

// Defaults, as on a Service Bus Standard queue.
const (
	DefaultLockDuration     = time.Minute
	DefaultMaxDeliveryCount = 10
	DefaultTTL              = 14 * 24 * time.Hour
	DefaultContainer        = "devhost-servicebus"

	// MaxLockDuration is the longest lock Service Bus allows.
	MaxLockDuration = 5 * time.Minute
)

// Dead-letter reasons set by the broker.
const (
	// ReasonMaxDeliveryCountExceeded is Service Bus' own reason.
	ReasonMaxDeliveryCountExceeded = "MaxDeliveryCountExceeded"
	// ReasonUndecodable marks a storage message that sbemu did not write.
	ReasonUndecodable = "UndecodableMessage"
)

// DeadLetterSuffix addresses a queue's dead-letter queue, as in Service Bus:
// Receive(ctx, "doc-ingest"+DeadLetterSuffix).
const DeadLetterSuffix = "/$DeadLetterQueue"

var (
	// ErrTooLarge is returned by Send for a message over a Service Bus size limit.
	ErrTooLarge = errors.New("sbemu: message too large")
	// ErrInvalidMessage is returned by Send for a message Service Bus would refuse
	// for another reason than its size.
	ErrInvalidMessage = errors.New("sbemu: invalid message")
	// ErrInvalidQueueName is returned for a queue name that has no storage queue.
	ErrInvalidQueueName = errors.New("sbemu: invalid queue name")
	// ErrLockLost is returned when settling or renewing a delivery whose lock
	// expired (the message may be redelivered) or that was already settled.
	ErrLockLost = errors.New("sbemu: message lock lost")
)

// Options configure a Broker. Zero values take the defaults.
type Options struct {
	// LockDuration is how long a received message stays locked (invisible to
	// other receivers). Default 1 minute, at most 5 minutes; rounded up to
	// whole seconds.
	LockDuration time.Duration
	// MaxDeliveryCount is the number of deliveries after which a message is
	// dead-lettered. Default 10, minimum 1.
	MaxDeliveryCount int
	// TTL is how long a sent message lives before it is dropped unreceived.
	// Default 14 days.
	TTL time.Duration
	// Container is the blob container for large messages and sequence
	// counters. Default "devhost-servicebus".
	Container string
	// Logger receives warnings about messages dropped or dead-lettered and
	// errors in Process. The zero Logger logs nothing. Bodies are never logged.
	Logger zerolog.Logger
	// Now is the clock of the messages' times: EnqueuedTime, ExpiresAt and
	// the TTL check on receive. Default time.Now. Locks are not on it: their
	// expiry is the storage queue's visibility timeout, in Azurite's time.
	Now func() time.Time
}

// Broker serves Service Bus queues from Azurite. It is safe for concurrent use.
type Broker struct {
	queues    *azqueue.ServiceClient
	blobs     *azblob.Client
	lock      time.Duration
	maxCount  int
	ttl       time.Duration
	container string
	log       zerolog.Logger
	now       func() time.Time

	mu        sync.Mutex
	created   map[string]bool // storage queues and the container known to exist
	sequences sync.Mutex      // serializes this broker's counter updates
}

// New returns a Broker on the given Azurite (or Azure Storage) clients.
func New(queues *azqueue.ServiceClient, blobs *azblob.Client, opts Options) (*Broker, error) {
	if queues == nil || blobs == nil {
		return nil, errors.New("sbemu: new broker: queue and blob clients are required")
	}
	b := &Broker{
		queues:    queues,
		blobs:     blobs,
		lock:      DefaultLockDuration,
		maxCount:  DefaultMaxDeliveryCount,
		ttl:       DefaultTTL,
		container: DefaultContainer,
		log:       opts.Logger,
		now:       opts.Now,
		created:   map[string]bool{},
	}
	var errs []error
	switch {
	case opts.LockDuration < 0 || opts.LockDuration > MaxLockDuration:
		errs = append(errs, fmt.Errorf("lock duration %v is outside (0, %v]", opts.LockDuration, MaxLockDuration))
	case opts.LockDuration > 0:
		b.lock = opts.LockDuration.Round(time.Second)
		if b.lock < opts.LockDuration {
			b.lock += time.Second
		}
	}
	switch {
	case opts.MaxDeliveryCount < 0:
		errs = append(errs, fmt.Errorf("max delivery count %d is below 1", opts.MaxDeliveryCount))
	case opts.MaxDeliveryCount > 0:
		b.maxCount = opts.MaxDeliveryCount
	}
	switch {
	case opts.TTL < 0:
		errs = append(errs, fmt.Errorf("ttl %v is negative", opts.TTL))
	case opts.TTL > 0:
		b.ttl = opts.TTL
	}
	if opts.Container != "" {
		if !storageName.MatchString(opts.Container) || len(opts.Container) > 63 {
			errs = append(errs, fmt.Errorf("container %q is not a valid blob container name", opts.Container))
		}
		b.container = opts.Container
	}
	if b.now == nil {
		b.now = time.Now
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("sbemu: new broker: %w", err)
	}
	return b, nil
}

// LockDuration returns the effective lock duration (after rounding).
func (b *Broker) LockDuration() time.Duration { return b.lock }

// MaxDeliveryCount returns the effective MaxDeliveryCount.
func (b *Broker) MaxDeliveryCount() int { return b.maxCount }

// storageName is what storage queue and container names allow.
var storageName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Storage queue names for a Service Bus queue: prefix + name must fit in 63.
const (
	activePrefix = "sb-"
	deadPrefix   = "sbdlq-"
	maxNameLen   = 63 - len(deadPrefix)
)

// entity is a resolved Service Bus queue name.
type entity struct {
	name   string // the Service Bus queue, lowercased, without the DLQ suffix
	dead   bool   // the dead-letter sub-queue
	active string // storage queue of the queue
	dlq    string // storage queue of its dead-letter queue
}

// storage returns the storage queue this entity reads from.
func (e entity) storage() string {
	if e.dead {
		return e.dlq
	}
	return e.active
}

// path returns the Service Bus path, e.g. "doc-ingest/$DeadLetterQueue".
func (e entity) path() string {
	if e.dead {
		return e.name + DeadLetterSuffix
	}
	return e.name
}

// resolve maps a Service Bus queue name (optionally with DeadLetterSuffix) to
// its storage queues.
func resolve(queue string) (entity, error) {
	name, dead := queue, false
	if i := len(queue) - len(DeadLetterSuffix); i > 0 && strings.EqualFold(queue[i:], DeadLetterSuffix) {
		name, dead = queue[:i], true
	}
	name = strings.ToLower(name)
	if !storageName.MatchString(name) || len(name) > maxNameLen {
		return entity{}, fmt.Errorf("%w: %q cannot be mapped to a storage queue: use lowercase letters, digits and single hyphens, at most %d characters",
			ErrInvalidQueueName, queue, maxNameLen)
	}
	return entity{name: name, dead: dead, active: activePrefix + name, dlq: deadPrefix + name}, nil
}

// ensureQueue creates a storage queue once per broker.
func (b *Broker) ensureQueue(ctx context.Context, name string) error {
	b.mu.Lock()
	done := b.created[name]
	b.mu.Unlock()
	if done {
		return nil
	}
	if _, err := b.queues.CreateQueue(ctx, name, nil); err != nil && !queueerror.HasCode(err, queueerror.QueueAlreadyExists) {
		return fmt.Errorf("create storage queue %q: %w", name, err)
	}
	b.mu.Lock()
	b.created[name] = true
	b.mu.Unlock()
	return nil
}

// ensureContainer creates the blob container once per broker.
func (b *Broker) ensureContainer(ctx context.Context) error {
	key := "container:" + b.container
	b.mu.Lock()
	done := b.created[key]
	b.mu.Unlock()
	if done {
		return nil
	}
	if _, err := b.blobs.CreateContainer(ctx, b.container, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return fmt.Errorf("create container %q: %w", b.container, err)
	}
	b.mu.Lock()
	b.created[key] = true
	b.mu.Unlock()
	return nil
}

// forget drops the memo of a queue after a QueueNotFound, so that a queue
// deleted behind the broker's back is created again.
func (b *Broker) forget(name string, err error) {
	if queueerror.HasCode(err, queueerror.QueueNotFound) {
		b.mu.Lock()
		delete(b.created, name)
		b.mu.Unlock()
	}
}

// forgetContainer drops the memo of the container after a ContainerNotFound.
func (b *Broker) forgetContainer(err error) {
	if bloberror.HasCode(err, bloberror.ContainerNotFound) {
		b.mu.Lock()
		delete(b.created, "container:"+b.container)
		b.mu.Unlock()
	}
}

// newID returns 32 random hex digits, the shape of a GUID in "N" format.
func newID() string {
	var buf [16]byte
	_, _ = rand.Read(buf[:]) // never fails (crypto/rand documents it)
	return hex.EncodeToString(buf[:])
}

// deref returns *p, or the zero value for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
