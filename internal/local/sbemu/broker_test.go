package sbemu_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/local/sbemu"
	"github.com/offpath/offpath/internal/testing/poll"
)

// offlineBroker has clients that point nowhere; for calls that fail before I/O.
func offlineBroker(t *testing.T, opts sbemu.Options) (*sbemu.Broker, error) {
	t.Helper()
	conn := "DefaultEndpointsProtocol=http;AccountName=" + azurite.Account + ";AccountKey=" + azurite.Key +
		";BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;QueueEndpoint=http://127.0.0.1:1/devstoreaccount1;"
	queues, err := azqueue.NewServiceClientFromConnectionString(conn, nil)
	if err != nil {
		t.Fatalf("queue client: %v", err)
	}
	blobs, err := azblob.NewClientFromConnectionString(conn, nil)
	if err != nil {
		t.Fatalf("blob client: %v", err)
	}
	return sbemu.New(queues, blobs, opts)
}

func TestNew_Options(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      sbemu.Options
		wantErr   string
		wantLock  time.Duration
		wantCount int
	}{
		{name: "defaults", wantLock: time.Minute, wantCount: 10},
		{name: "lock rounded up to whole seconds", opts: sbemu.Options{LockDuration: 1500 * time.Millisecond, MaxDeliveryCount: 3}, wantLock: 2 * time.Second, wantCount: 3},
		{name: "sub-second lock", opts: sbemu.Options{LockDuration: time.Millisecond}, wantLock: time.Second, wantCount: 10},
		{name: "lock over five minutes", opts: sbemu.Options{LockDuration: 6 * time.Minute}, wantErr: "lock duration"},
		{name: "negative max delivery count", opts: sbemu.Options{MaxDeliveryCount: -1}, wantErr: "max delivery count"},
		{name: "negative ttl", opts: sbemu.Options{TTL: -time.Second}, wantErr: "ttl"},
		{name: "bad container", opts: sbemu.Options{Container: "Bad_Name"}, wantErr: "container"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := offlineBroker(t, tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New(%+v) error = %v, want one about %q", tc.opts, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%+v): %v", tc.opts, err)
			}
			if b.LockDuration() != tc.wantLock || b.MaxDeliveryCount() != tc.wantCount {
				t.Fatalf("New(%+v): lock %v, max delivery count %d; want %v, %d",
					tc.opts, b.LockDuration(), b.MaxDeliveryCount(), tc.wantLock, tc.wantCount)
			}
		})
	}
}

func TestBroker_InvalidQueueNames(t *testing.T) {
	t.Parallel()
	b, err := offlineBroker(t, sbemu.Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx := context.Background()
	for _, name := range []string{"", "doc_ingest", "doc.ingest", "orders/sub", "a--b", "-ab", "ab-", strings.Repeat("a", 58), "x/$DeadLetterQueue/$DeadLetterQueue"} {
		if err := b.Send(ctx, name, sbemu.Message{Body: []byte("x")}); !errors.Is(err, sbemu.ErrInvalidQueueName) {
			t.Errorf("Send(%q) error = %v, want ErrInvalidQueueName", name, err)
		}
		if _, err := b.Receive(ctx, name); !errors.Is(err, sbemu.ErrInvalidQueueName) {
			t.Errorf("Receive(%q) error = %v, want ErrInvalidQueueName", name, err)
		}
	}
	if err := b.Send(ctx, "doc-ingest"+sbemu.DeadLetterSuffix, sbemu.Message{}); !errors.Is(err, sbemu.ErrInvalidQueueName) {
		t.Errorf("Send to a dead-letter queue: error = %v, want ErrInvalidQueueName", err)
	}
	err = b.Process(ctx, "doc_ingest", sbemu.ProcessOptions{}, func(context.Context, *sbemu.Delivery) error { return nil })
	if !errors.Is(err, sbemu.ErrInvalidQueueName) {
		t.Errorf("Process(%q) error = %v, want ErrInvalidQueueName", "doc_ingest", err)
	}
}

func TestBroker_SendReceiveComplete(t *testing.T) {
	t.Parallel()
	b := newBroker(t, nil, sbemu.Options{TTL: time.Hour})
	q := queueName(t)
	ctx := context.Background()
	props := map[string]any{"tenant": "contoso", "attempt": 2, "big": int64(1) << 60, "ratio": 0.5, "ok": true, "none": nil, "date": "2025-03-01T12:00:00Z"}
	sent := sbemu.Message{
		Body:                  []byte(`{"blob":"incoming/contoso/a.pdf"}`),
		MessageID:             "msg-1",
		CorrelationID:         "req-5521",
		ContentType:           "application/json",
		Subject:               "ingest \uFFFE", // a character XML cannot carry
		ApplicationProperties: props,
	}
	before := time.Now()
	mustSend(t, b, q, sent)
	mustSend(t, b, q, sbemu.Message{Body: []byte("second")})

	// Queue names are case-insensitive, as in Service Bus.
	d, err := b.Receive(ctx, strings.ToUpper(q))
	if err != nil || d == nil {
		t.Fatalf("Receive = %v, %v; want a message", d, err)
	}
	if string(d.Body) != string(sent.Body) || d.MessageID != "msg-1" || d.CorrelationID != "req-5521" ||
		d.ContentType != "application/json" || d.Subject != sent.Subject {
		t.Errorf("Receive = %+v, want the sent message %+v", d.Message, sent)
	}
	wantProps := map[string]any{"tenant": "contoso", "attempt": int64(2), "big": int64(1) << 60, "ratio": 0.5, "ok": true, "none": nil, "date": "2025-03-01T12:00:00Z"}
	if !maps.Equal(d.ApplicationProperties, wantProps) {
		t.Errorf("ApplicationProperties = %#v, want %#v", d.ApplicationProperties, wantProps)
	}
	if d.DeliveryCount != 1 || d.SequenceNumber < 1 || d.LockToken == "" || d.DeadLetterReason != "" {
		t.Errorf("DeliveryCount %d, SequenceNumber %d, LockToken %q, DeadLetterReason %q; want 1, >0, set, empty",
			d.DeliveryCount, d.SequenceNumber, d.LockToken, d.DeadLetterReason)
	}
	if d.EnqueuedTime.Before(before.Add(-time.Second)) || d.EnqueuedTime.After(time.Now()) || !d.ExpiresAt.Equal(d.EnqueuedTime.Add(time.Hour)) {
		t.Errorf("EnqueuedTime %v, ExpiresAt %v; want about now and one hour later", d.EnqueuedTime, d.ExpiresAt)
	}
	if until := d.LockedUntil(); until.Before(time.Now().Add(50*time.Second)) || until.After(time.Now().Add(time.Minute)) {
		t.Errorf("LockedUntil = %v, want about a minute from now", until)
	}

	second, err := b.Receive(ctx, q)
	if err != nil || second == nil {
		t.Fatalf("second Receive = %v, %v; want the second message", second, err)
	}
	if string(second.Body) != "second" || len(second.MessageID) != 32 || second.SequenceNumber <= d.SequenceNumber {
		t.Errorf("second message: body %q, MessageID %q, SequenceNumber %d; want %q, 32 hex digits, above %d",
			second.Body, second.MessageID, second.SequenceNumber, "second", d.SequenceNumber)
	}
	if d.LockToken == second.LockToken {
		t.Errorf("two deliveries share the lock token %q", d.LockToken)
	}
	if none, err := b.Receive(ctx, q); none != nil || err != nil {
		t.Fatalf("Receive while both are locked = %v, %v; want nil, nil", none, err)
	}
	for _, d := range []*sbemu.Delivery{d, second} {
		if err := b.Complete(ctx, d); err != nil {
			t.Fatalf("Complete: %v", err)
		}
	}
	if err := b.Complete(ctx, d); !errors.Is(err, sbemu.ErrLockLost) {
		t.Errorf("second Complete error = %v, want ErrLockLost", err)
	}
	if active, dead := counts(t, b, q); active != 0 || dead != 0 {
		t.Errorf("Count after Complete = %d, %d; want 0, 0", active, dead)
	}
}

func TestBroker_AbandonRedeliversAtOnce(t *testing.T) {
	t.Parallel()
	b := newBroker(t, nil, sbemu.Options{})
	q := queueName(t)
	mustSend(t, b, q, sbemu.Message{Body: []byte("again")})
	ctx := context.Background()
	for want := 1; want <= 3; want++ {
		d, err := b.Receive(ctx, q)
		if err != nil || d == nil {
			t.Fatalf("Receive #%d = %v, %v; want the message", want, d, err)
		}
		if d.DeliveryCount != want {
			t.Fatalf("DeliveryCount = %d, want %d", d.DeliveryCount, want)
		}
		if err := b.Abandon(ctx, d, "try again"); err != nil {
			t.Fatalf("Abandon: %v", err)
		}
	}
	if active, dead := counts(t, b, q); active != 1 || dead != 0 {
		t.Errorf("Count = %d, %d; want 1, 0", active, dead)
	}
}

func TestBroker_DropsExpiredMessages(t *testing.T) {
	t.Parallel()
	var clock atomic.Pointer[time.Time] // the messages' clock, moved by hand
	start := time.Now()
	clock.Store(&start)
	b := newBroker(t, nil, sbemu.Options{TTL: time.Hour, Now: func() time.Time { return *clock.Load() }})
	q := queueName(t)
	mustSend(t, b, q, sbemu.Message{Body: []byte("stale")})
	later := start.Add(time.Hour + time.Nanosecond)
	clock.Store(&later)
	if d, err := b.Receive(context.Background(), q); d != nil || err != nil {
		t.Fatalf("Receive of an expired message = %+v, %v; want nil, nil", d, err)
	}
	if active, dead := counts(t, b, q); active != 0 || dead != 0 {
		t.Errorf("Count = %d, %d; want 0, 0 (dropped, not dead-lettered)", active, dead)
	}
}

func TestBroker_LockExpiryRedeliversThenDeadLetters(t *testing.T) {
	t.Parallel()
	b := newBroker(t, nil, sbemu.Options{LockDuration: 2 * time.Second, MaxDeliveryCount: 2})
	q := queueName(t)
	mustSend(t, b, q, sbemu.Message{Body: []byte("crash")})
	ctx := context.Background()

	first := receiveWithin(t, b, q, 10*time.Second)
	if d, err := b.Receive(ctx, q); d != nil || err != nil {
		t.Fatalf("Receive while locked = %v, %v; want nil, nil", d, err)
	}
	// The consumer "crashes": the lock expires and the message comes back.
	second := receiveWithin(t, b, q, 10*time.Second)
	if first.DeliveryCount != 1 || second.DeliveryCount != 2 || second.MessageID != first.MessageID {
		t.Fatalf("deliveries %d then %d of %q/%q; want 1 then 2 of one message",
			first.DeliveryCount, second.DeliveryCount, first.MessageID, second.MessageID)
	}
	if err := b.Complete(ctx, first); !errors.Is(err, sbemu.ErrLockLost) {
		t.Errorf("Complete with an expired lock: error = %v, want ErrLockLost", err)
	}
	// Its second lock expires too: past MaxDeliveryCount, the next receive
	// dead-letters it instead of delivering it.
	eventually(t, 10*time.Second, "dead-lettering after lock expiry", func() (bool, error) {
		d, err := b.Receive(ctx, q)
		if d != nil {
			t.Fatalf("Receive delivered %q a third time with DeliveryCount %d", d.MessageID, d.DeliveryCount)
		}
		_, dead, cerr := b.Count(ctx, q)
		return dead == 1, errors.Join(err, cerr)
	})
	dls, err := b.DeadLetters(ctx, q, 10)
	if err != nil || len(dls) != 1 {
		t.Fatalf("DeadLetters = %v, %v; want one", dls, err)
	}
	dl := dls[0]
	if dl.DeadLetterReason != sbemu.ReasonMaxDeliveryCountExceeded || dl.DeliveryCount != 2 || dl.DeadLetterSource != q ||
		!strings.Contains(dl.DeadLetterErrorDescription, "after 2 delivery attempts") {
		t.Errorf("dead letter = reason %q, count %d, source %q, description %q; want %q, 2, %q, after 2 attempts",
			dl.DeadLetterReason, dl.DeliveryCount, dl.DeadLetterSource, dl.DeadLetterErrorDescription,
			sbemu.ReasonMaxDeliveryCountExceeded, q)
	}
}

func TestBroker_RenewLockKeepsMessageHidden(t *testing.T) {
	t.Parallel()
	b := newBroker(t, nil, sbemu.Options{LockDuration: 2 * time.Second})
	q := queueName(t)
	mustSend(t, b, q, sbemu.Message{Body: []byte("slow")})
	ctx := context.Background()
	d := receiveWithin(t, b, q, 10*time.Second)
	// Renew until one and a half lock durations from the receipt: the lock
	// is Azurite's visibility timeout, on the wall clock.
	past := d.LockedUntil().Add(b.LockDuration() / 2)
	poll.Until(t, 2*b.LockDuration(), "one and a half lock durations of renewals", func() bool {
		if err := b.RenewLock(ctx, d); err != nil {
			t.Fatalf("RenewLock: %v", err)
		}
		if other, err := b.Receive(ctx, q); other != nil || err != nil {
			t.Fatalf("Receive during a renewed lock = %+v, %v; want nil, nil", other, err)
		}
		return time.Now().After(past)
	})
	if err := b.Complete(ctx, d); err != nil {
		t.Fatalf("Complete after renewals: %v", err)
	}
	if err := b.RenewLock(ctx, d); !errors.Is(err, sbemu.ErrLockLost) {
		t.Errorf("RenewLock after Complete: error = %v, want ErrLockLost", err)
	}
}

func TestSend_SequenceNumbersAcrossBrokers(t *testing.T) {
	t.Parallel()
	brokers := []*sbemu.Broker{newBroker(t, nil, sbemu.Options{}), newBroker(t, nil, sbemu.Options{})}
	q := queueName(t)
	const each = 8
	errs := make(chan error, len(brokers)*each)
	for _, b := range brokers {
		for range each {
			go func() { errs <- b.Send(context.Background(), q, sbemu.Message{Body: []byte("x")}) }()
		}
	}
	for range len(brokers) * each {
		if err := <-errs; err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	seen := map[int64]bool{}
	for range len(brokers) * each {
		d, err := brokers[0].Receive(context.Background(), q)
		if err != nil || d == nil {
			t.Fatalf("Receive = %v, %v; want a message", d, err)
		}
		if seen[d.SequenceNumber] || d.SequenceNumber < 1 || d.SequenceNumber > int64(len(brokers)*each) {
			t.Errorf("SequenceNumber %d repeated or outside 1..%d", d.SequenceNumber, len(brokers)*each)
		}
		seen[d.SequenceNumber] = true
	}
}
