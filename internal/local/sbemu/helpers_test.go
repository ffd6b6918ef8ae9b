package sbemu_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/local/sbemu"
	"github.com/offpath/offpath/internal/testing/poll"
)

// One Azurite serves the package's tests: starting one takes seconds.
var shared azurite.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// sharedAzurite starts the shared Azurite on first use.
func sharedAzurite(tb testing.TB) *azurite.Azurite {
	tb.Helper()
	return shared.Get(tb)
}

// newBroker returns a broker on az (the shared Azurite if nil) that logs to t.
func newBroker(t *testing.T, az *azurite.Azurite, opts sbemu.Options) *sbemu.Broker {
	t.Helper()
	if az == nil {
		az = sharedAzurite(t)
	}
	queues, err := azqueue.NewServiceClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatalf("queue client: %v", err)
	}
	blobs, err := azblob.NewClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatalf("blob client: %v", err)
	}
	opts.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	b, err := sbemu.New(queues, blobs, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// queueName returns a unique Service Bus queue name for the test.
func queueName(t *testing.T) string {
	t.Helper()
	n := azurite.Name(t)
	i := strings.LastIndex(n, "-")
	base, suffix := n[:i], n[i:]
	return strings.Trim(base[:min(len(base), 40)], "-") + suffix
}

// eventually polls cond until it holds or timeout passes; an error from
// cond fails the test at once.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var err error
	held := poll.Within(timeout, func() bool {
		var ok bool
		ok, err = cond()
		return ok || err != nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !held {
		t.Fatalf("%s: not after %v", what, timeout)
	}
}

// receiveWithin polls Receive until a message comes or timeout passes.
func receiveWithin(t *testing.T, b *sbemu.Broker, queue string, timeout time.Duration) *sbemu.Delivery {
	t.Helper()
	var d *sbemu.Delivery
	eventually(t, timeout, fmt.Sprintf("receive from %q", queue), func() (bool, error) {
		var err error
		d, err = b.Receive(context.Background(), queue)
		return d != nil, err
	})
	return d
}

// mustSend sends m or fails the test.
func mustSend(t *testing.T, b *sbemu.Broker, queue string, m sbemu.Message) {
	t.Helper()
	if err := b.Send(context.Background(), queue, m); err != nil {
		t.Fatalf("Send(%q): %v", queue, err)
	}
}

// process runs b.Process in the background until the test ends.
func process(t *testing.T, b *sbemu.Broker, queue string, o sbemu.ProcessOptions, h sbemu.Handler) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Process(ctx, queue, o, h) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// counts returns Count or fails the test.
func counts(t *testing.T, b *sbemu.Broker, queue string) (active, dead int) {
	t.Helper()
	active, dead, err := b.Count(context.Background(), queue)
	if err != nil {
		t.Fatalf("Count(%q): %v", queue, err)
	}
	return active, dead
}
