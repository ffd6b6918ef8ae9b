package sbemu_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/local/sbemu"
)

func TestReceive_DeadLettersWhatItCannotDecode(t *testing.T) {
	t.Parallel()
	az := sharedAzurite(t)
	b := newBroker(t, az, sbemu.Options{})
	q := queueName(t)
	ctx := context.Background()
	queues, err := azqueue.NewServiceClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatalf("queue client: %v", err)
	}
	garbage := []string{
		"not json at all",
		`{"sbemu":1}`,
		`{"sbemu":2,"message":{"body":"eA=="}}`,
		`{"sbemu":1,"blob":"messages/gone.json"}`,
		`{"sbemu":1,"message":{"body":"not base64!"}}`,
		strings.Repeat("<&>", 20*1024), // 60 KiB: its dead letter must go through a blob
	}
	raw := func(storageQueue string, texts ...string) {
		t.Helper()
		client := queues.NewQueueClient(storageQueue)
		if _, err := client.Create(ctx, nil); err != nil {
			t.Fatalf("create %q: %v", storageQueue, err)
		}
		for _, text := range texts {
			if _, err := client.EnqueueMessage(ctx, text, nil); err != nil {
				t.Fatalf("put garbage on %q: %v", storageQueue, err)
			}
		}
	}
	raw("sb-"+q, garbage...)
	raw("sbdlq-"+q, "garbage put straight in the DLQ")
	mustSend(t, b, q, sbemu.Message{Body: []byte("good")})

	got := make(chan string, 10)
	process(t, b, q, fast(), func(_ context.Context, d *sbemu.Delivery) error {
		got <- string(d.Body)
		return nil
	})
	select {
	case body := <-got:
		if body != "good" {
			t.Fatalf("handler got %.40q, want only the good message", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the good message behind the garbage was not delivered")
	}

	dls, err := b.DeadLetters(ctx, q, 32)
	if err != nil {
		t.Fatalf("DeadLetters: %v", err)
	}
	want := map[string]bool{"garbage put straight in the DLQ": true}
	for _, g := range garbage {
		want[g] = true
	}
	for _, d := range dls {
		if !want[string(d.Body)] {
			t.Errorf("unexpected dead letter %.40q", d.Body)
			continue
		}
		delete(want, string(d.Body))
		if d.DeadLetterReason != sbemu.ReasonUndecodable || d.DeadLetterErrorDescription == "" {
			t.Errorf("dead letter %.40q: reason %q, description %q; want %q with a description",
				d.Body, d.DeadLetterReason, d.DeadLetterErrorDescription, sbemu.ReasonUndecodable)
		}
	}
	for g := range want {
		t.Errorf("%.40q is not in the dead-letter queue", g)
	}
	select {
	case body := <-got:
		t.Errorf("handler also got %.40q", body)
	default:
	}
}

func TestBroker_MessagesSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	az := azurite.StartIn(t, dir)
	opts := sbemu.Options{LockDuration: time.Second}
	b := newBroker(t, az, opts)
	q := queueName(t)
	ctx := context.Background()

	large := make([]byte, 100*1024) // over a storage message: goes through a blob
	for i := range large {
		large[i] = byte(i % 251)
	}
	mustSend(t, b, q, sbemu.Message{Body: []byte("small"), MessageID: "small", ApplicationProperties: map[string]any{"n": 1}})
	mustSend(t, b, q, sbemu.Message{Body: large, MessageID: "large"})
	// The consumer takes the small one and dies with it.
	if d := receiveWithin(t, b, q, 10*time.Second); d.MessageID != "small" || d.DeliveryCount != 1 {
		t.Fatalf("first delivery %q #%d, want small #1", d.MessageID, d.DeliveryCount)
	}

	az.Stop()
	az = azurite.StartIn(t, dir)
	b = newBroker(t, az, sbemu.Options{}) // a one-minute lock from now on

	got := map[string]*sbemu.Delivery{}
	eventually(t, 10*time.Second, "both messages after the restart", func() (bool, error) {
		d, err := b.Receive(ctx, q)
		if d != nil {
			got[d.MessageID] = d
		}
		return len(got) == 2, err
	})
	small, big := got["small"], got["large"]
	if small == nil || big == nil {
		t.Fatalf("after restart got %v, want small and large", got)
	}
	if string(small.Body) != "small" || small.DeliveryCount != 2 || small.ApplicationProperties["n"] != int64(1) {
		t.Errorf("small after restart: %q #%d %v; want %q #2 n=1", small.Body, small.DeliveryCount, small.ApplicationProperties, "small")
	}
	if !bytes.Equal(big.Body, large) || big.DeliveryCount != 1 {
		t.Errorf("large after restart: %d bytes #%d; want the %d bytes sent, #1", len(big.Body), big.DeliveryCount, len(large))
	}
	mustSend(t, b, q, sbemu.Message{Body: []byte("later"), MessageID: "later"})
	later := receiveWithin(t, b, q, 10*time.Second)
	if later.MessageID != "later" {
		t.Fatalf("received %q, want the message sent after the restart", later.MessageID)
	}
	if later.SequenceNumber <= max(small.SequenceNumber, big.SequenceNumber) {
		t.Errorf("SequenceNumber after restart %d, want above %d and %d", later.SequenceNumber, small.SequenceNumber, big.SequenceNumber)
	}
	for _, d := range []*sbemu.Delivery{small, big, later} {
		if err := b.Complete(ctx, d); err != nil {
			t.Fatalf("Complete(%q): %v", d.MessageID, err)
		}
	}

	// Completing the large message deleted its blob.
	blobs, err := azblob.NewClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatalf("blob client: %v", err)
	}
	pager := blobs.NewListBlobsFlatPager(sbemu.DefaultContainer, &azblob.ListBlobsFlatOptions{Prefix: to.Ptr("messages/")})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatalf("list blobs: %v", err)
		}
		for _, item := range page.Segment.BlobItems {
			t.Errorf("blob %q left behind after Complete", *item.Name)
		}
	}
}
