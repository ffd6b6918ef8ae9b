package sbemu_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/sbemu"
	"github.com/offpath/offpath/internal/testing/poll"
)

// fast polls often, so that tests do not wait for the 1 s default.
func fast() sbemu.ProcessOptions { return sbemu.ProcessOptions{PollInterval: 50 * time.Millisecond} }

func TestProcess_FailingHandlerIsRedeliveredThenDeadLettered(t *testing.T) {
	t.Parallel()
	b := newBroker(t, nil, sbemu.Options{MaxDeliveryCount: 3}) // Abandon redelivers at once: no lock runs out
	q := queueName(t)
	mustSend(t, b, q, sbemu.Message{Body: []byte("poison"), MessageID: "poison-1", ApplicationProperties: map[string]any{"tenant": "contoso"}})

	var mu sync.Mutex
	var seen []int
	process(t, b, q, fast(), func(_ context.Context, d *sbemu.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, d.DeliveryCount)
		return fmt.Errorf("model returned 503 on attempt %d", d.DeliveryCount)
	})
	ctx := context.Background()
	// Dead-lettering copies the message to the DLQ, then deletes it from the
	// queue (two storage operations): wait for both.
	eventually(t, 10*time.Second, "dead-lettering", func() (bool, error) {
		active, dead, err := b.Count(ctx, q)
		return dead == 1 && active == 0, err
	})
	mu.Lock()
	got := slices.Clone(seen)
	mu.Unlock()
	if !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("handler saw DeliveryCount %v, want [1 2 3]", got)
	}

	// The dead letter can be peeked, and received from the DLQ like on Service Bus.
	dls, err := b.DeadLetters(ctx, q, 10)
	if err != nil || len(dls) != 1 {
		t.Fatalf("DeadLetters = %v, %v; want one", dls, err)
	}
	d := receiveWithin(t, b, q+sbemu.DeadLetterSuffix, 10*time.Second)
	for _, dl := range []sbemu.Delivery{dls[0], *d} {
		if dl.MessageID != "poison-1" || string(dl.Body) != "poison" || dl.ApplicationProperties["tenant"] != "contoso" {
			t.Errorf("dead letter %q %q %v, want the sent message", dl.MessageID, dl.Body, dl.ApplicationProperties)
		}
		if dl.DeadLetterReason != sbemu.ReasonMaxDeliveryCountExceeded || dl.DeadLetterSource != q ||
			!strings.Contains(dl.DeadLetterErrorDescription, "after 3 delivery attempts") ||
			!strings.Contains(dl.DeadLetterErrorDescription, "503 on attempt 3") {
			t.Errorf("dead letter reason %q, source %q, description %q; want %q from %q with the last error",
				dl.DeadLetterReason, dl.DeadLetterSource, dl.DeadLetterErrorDescription, sbemu.ReasonMaxDeliveryCountExceeded, q)
		}
	}
	if dls[0].DeliveryCount != 3 || d.DeliveryCount != 4 || d.Queue != q+sbemu.DeadLetterSuffix {
		t.Errorf("DeliveryCount peeked %d, received from %q %d; want 3 and 4 from the DLQ", dls[0].DeliveryCount, d.Queue, d.DeliveryCount)
	}
	// Abandoning in the DLQ never dead-letters again; Complete removes it.
	if err := b.Abandon(ctx, d, "still broken"); err != nil {
		t.Fatalf("Abandon in the DLQ: %v", err)
	}
	d = receiveWithin(t, b, q+sbemu.DeadLetterSuffix, 10*time.Second)
	if err := b.Complete(ctx, d); err != nil {
		t.Fatalf("Complete in the DLQ: %v", err)
	}
	if active, dead := counts(t, b, q); active != 0 || dead != 0 {
		t.Errorf("Count = %d, %d; want 0, 0", active, dead)
	}
}

// TestProcess_RespectsMaxConcurrentCalls: with MaxConcurrentCalls 3 and
// ten messages, the first three handlers block until all three have
// arrived (so three run at once), and while they hold, the test drains the
// queue itself: the stand-in hands it the seven others, so Process received
// no fourth while its three slots were taken.
func TestProcess_RespectsMaxConcurrentCalls(t *testing.T) {
	t.Parallel()
	b := newBroker(t, nil, sbemu.Options{})
	q := queueName(t)
	const messages, limit = 10, 3
	for i := range messages {
		mustSend(t, b, q, sbemu.Message{Body: fmt.Appendf(nil, "m%d", i)})
	}
	var arrived atomic.Int32
	all, release := make(chan struct{}), make(chan struct{})
	o := fast()
	o.MaxConcurrentCalls = limit
	process(t, b, q, o, func(context.Context, *sbemu.Delivery) error {
		switch n := arrived.Add(1); {
		case n == limit:
			close(all)
		case n > limit:
			return fmt.Errorf("handler %d ran while %d held", n, limit)
		}
		<-release
		return nil
	})
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatalf("%d handlers arrived, want %d running at once", arrived.Load(), limit)
	}
	ctx := context.Background()
	var drained []*sbemu.Delivery
	eventually(t, 10*time.Second, "the test receiving every message Process did not take", func() (bool, error) {
		d, err := b.Receive(ctx, q)
		if d != nil {
			drained = append(drained, d)
		}
		return d == nil, err
	})
	if n := arrived.Load(); n != limit || len(drained) != messages-limit {
		t.Errorf("while %d handlers held: %d arrived, the test received %d; want %d and %d", limit, n, len(drained), limit, messages-limit)
	}
	for _, d := range drained {
		if err := b.Complete(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	eventually(t, 10*time.Second, "completing every message", func() (bool, error) {
		active, dead, err := b.Count(ctx, q)
		return active == 0 && dead == 0, err
	})
}

func TestProcess_RenewsTheLockOfASlowHandler(t *testing.T) {
	t.Parallel()
	b := newBroker(t, nil, sbemu.Options{LockDuration: 2 * time.Second})
	other := newBroker(t, nil, sbemu.Options{}) // a competing consumer
	q := queueName(t)
	mustSend(t, b, q, sbemu.Message{Body: []byte("slow")})

	var calls atomic.Int32
	started := make(chan *sbemu.Delivery, 1)
	release := make(chan struct{})
	process(t, b, q, fast(), func(_ context.Context, d *sbemu.Delivery) error {
		if calls.Add(1) == 1 {
			started <- d
		}
		<-release
		return nil
	})
	d := <-started
	// The handler holds the message past one and a half lock durations from
	// its receipt; the lock is Azurite's visibility timeout, on the wall
	// clock, so the other consumer asks until then.
	past := d.LockedUntil().Add(b.LockDuration() / 2)
	ctx := context.Background()
	poll.Until(t, 2*b.LockDuration(), "one and a half lock durations", func() bool {
		if d, err := other.Receive(ctx, q); d != nil || err != nil {
			t.Fatalf("another consumer received %+v, %v while the handler ran; want nil, nil", d, err)
		}
		return time.Now().After(past)
	})
	close(release)
	eventually(t, 10*time.Second, "completion", func() (bool, error) {
		active, _, err := b.Count(ctx, q)
		return active == 0, err
	})
	if n := calls.Load(); n != 1 {
		t.Errorf("handler called %d times, want 1", n)
	}
}

func TestProcess_LockLapsesAfterMaxAutoLockRenewal(t *testing.T) {
	t.Parallel()
	b := newBroker(t, nil, sbemu.Options{LockDuration: time.Second})
	q := queueName(t)
	mustSend(t, b, q, sbemu.Message{Body: []byte("too slow")})

	release := make(chan struct{})
	deliveries := make(chan int, 4)
	o := fast()
	o.MaxConcurrentCalls, o.MaxAutoLockRenewal = 2, time.Second
	process(t, b, q, o, func(_ context.Context, d *sbemu.Delivery) error {
		deliveries <- d.DeliveryCount
		<-release
		return nil
	})
	defer close(release)
	for want := 1; want <= 2; want++ {
		select {
		case got := <-deliveries:
			if got != want {
				t.Fatalf("delivery %d has DeliveryCount %d", want, got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no delivery %d: the lock should lapse after MaxAutoLockRenewal while the handler still runs", want)
		}
	}
}

func TestProcess_PanicAbandons(t *testing.T) {
	t.Parallel()
	b := newBroker(t, nil, sbemu.Options{})
	q := queueName(t)
	mustSend(t, b, q, sbemu.Message{Body: []byte("boom")})
	var calls atomic.Int32
	process(t, b, q, fast(), func(_ context.Context, d *sbemu.Delivery) error {
		if calls.Add(1) == 1 {
			panic("handler bug")
		}
		if d.DeliveryCount != 2 {
			return fmt.Errorf("DeliveryCount %d after a panic, want 2", d.DeliveryCount)
		}
		return nil
	})
	eventually(t, 10*time.Second, "completion after the panic", func() (bool, error) {
		active, dead, err := b.Count(context.Background(), q)
		return active == 0 && dead == 0, err
	})
	if n := calls.Load(); n != 2 {
		t.Errorf("handler called %d times, want 2", n)
	}
}

func TestProcess_StopAbandonsMessagesCutOff(t *testing.T) {
	t.Parallel()
	b := newBroker(t, nil, sbemu.Options{}) // a one-minute lock: only Abandon can bring it back quickly
	q := queueName(t)
	mustSend(t, b, q, sbemu.Message{Body: []byte("in flight")})
	running := make(chan struct{})
	stop := process(t, b, q, fast(), func(ctx context.Context, _ *sbemu.Delivery) error {
		close(running)
		<-ctx.Done()
		return ctx.Err()
	})
	<-running
	if err := stop(); err != nil {
		t.Fatalf("Process returned %v after its context ended, want nil", err)
	}
	d, err := b.Receive(context.Background(), q)
	if err != nil || d == nil {
		t.Fatalf("Receive after stop = %v, %v; want the abandoned message at once", d, err)
	}
	if d.DeliveryCount != 2 {
		t.Errorf("DeliveryCount = %d, want 2", d.DeliveryCount)
	}
}

func TestProcess_HandlerMaySettleItself(t *testing.T) {
	t.Parallel()
	b := newBroker(t, nil, sbemu.Options{})
	q := queueName(t)
	mustSend(t, b, q, sbemu.Message{Body: []byte("self")})
	settled := make(chan error, 1)
	outcome := make(chan sbemu.Settlement, 1)
	o := fast()
	o.Settled = func(s sbemu.Settlement) { outcome <- s }
	process(t, b, q, o, func(ctx context.Context, d *sbemu.Delivery) error {
		settled <- b.Complete(ctx, d)
		return errors.New("ignored: already completed")
	})
	select {
	case err := <-settled:
		if err != nil {
			t.Fatalf("Complete inside the handler: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("handler not called")
	}
	if s := <-outcome; s.Outcome != sbemu.Unsettled { // Process is done with it
		t.Errorf("Process settled a message its handler completed: %+v", s)
	}
	if active, dead := counts(t, b, q); active != 0 || dead != 0 {
		t.Errorf("Count = %d, %d; want 0, 0", active, dead)
	}
}

// TestProcess_ReportsSettlements: Settled hears each delivery's fate after
// it is settled: abandoned, then dead-lettered at MaxDeliveryCount; and a
// good message completed on its first delivery.
func TestProcess_ReportsSettlements(t *testing.T) {
	t.Parallel()
	b := newBroker(t, nil, sbemu.Options{MaxDeliveryCount: 2})
	q := queueName(t)
	mustSend(t, b, q, sbemu.Message{Body: []byte("bad"), MessageID: "bad-1"})
	mustSend(t, b, q, sbemu.Message{Body: []byte("good"), MessageID: "good-1"})
	settled := make(chan sbemu.Settlement, 8)
	o := fast()
	o.Settled = func(s sbemu.Settlement) { settled <- s }
	process(t, b, q, o, func(_ context.Context, d *sbemu.Delivery) error {
		if string(d.Body) == "bad" {
			return errors.New("no")
		}
		return nil
	})
	got := map[string][]string{}
	timeout := time.After(20 * time.Second)
	for len(got["bad-1"]) < 2 || len(got["good-1"]) < 1 {
		select {
		case s := <-settled:
			if s.Queue != q {
				t.Errorf("settlement on %q, want %q", s.Queue, q)
			}
			got[s.MessageID] = append(got[s.MessageID], fmt.Sprintf("%s@%d", s.Outcome, s.DeliveryCount))
			if (s.HandlerErr != nil) != (s.MessageID == "bad-1") {
				t.Errorf("%s: HandlerErr %v", s.MessageID, s.HandlerErr)
			}
		case <-timeout:
			t.Fatalf("settlements so far %v", got)
		}
	}
	if !slices.Equal(got["bad-1"], []string{"abandoned@1", "deadlettered@2"}) || !slices.Equal(got["good-1"], []string{"completed@1"}) {
		t.Errorf("settlements %v", got)
	}
}
