package blobwatch

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/offpath/offpath/internal/local/azurite"
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

// env is an Azurite with clients and a fresh container.
type env struct {
	az        *azurite.Azurite
	blobs     *azblob.Client
	queues    *azqueue.ServiceClient
	container string
}

func newEnv(t *testing.T) env {
	t.Helper()
	return envOn(t, sharedAzurite(t), azurite.Name(t))
}

// envOn connects to az and creates container unless it exists.
func envOn(t *testing.T, az *azurite.Azurite, container string) env {
	t.Helper()
	blobs, err := azblob.NewClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatalf("blob client: %v", err)
	}
	queues, err := azqueue.NewServiceClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatalf("queue client: %v", err)
	}
	e := env{az: az, blobs: blobs, queues: queues, container: container}
	if _, err := blobs.CreateContainer(context.Background(), container, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		t.Fatalf("create container %q: %v", container, err)
	}
	return e
}

// put uploads content to name and returns the blob's ETag as azblob reports it.
func (e env) put(t *testing.T, name, content string, opts *azblob.UploadBufferOptions) string {
	t.Helper()
	resp, err := e.blobs.UploadBuffer(context.Background(), e.container, name, []byte(content), opts)
	if err != nil {
		t.Fatalf("upload %q: %v", name, err)
	}
	return string(*resp.ETag)
}

func (e env) pattern(t *testing.T, blobPattern string) Pattern {
	t.Helper()
	p, err := ParsePath(e.container + "/" + blobPattern)
	if err != nil {
		t.Fatalf("ParsePath: %v", err)
	}
	return p
}

func (e env) watcher(opts Options) *Watcher { return New(e.blobs, e.queues, opts) }

// poisonMessages reads (without removing) the messages on the poison queue
// for blobs in e's container.
func (e env) poisonMessages(t *testing.T) []poisonMessage {
	t.Helper()
	n := int32(32) // the most a peek returns; the tests write far fewer
	resp, err := e.queues.NewQueueClient(poisonQueue).PeekMessages(context.Background(), &azqueue.PeekMessagesOptions{NumberOfMessages: &n})
	if err != nil {
		t.Fatalf("peek %s: %v", poisonQueue, err)
	}
	var msgs []poisonMessage
	for _, m := range resp.Messages {
		raw, err := base64.StdEncoding.DecodeString(*m.MessageText)
		if err != nil {
			t.Fatalf("poison message %q is not base64: %v", *m.MessageText, err)
		}
		var pm poisonMessage
		if err := json.Unmarshal(raw, &pm); err != nil {
			t.Fatalf("poison message %s is not JSON: %v", raw, err)
		}
		if pm.ContainerName == e.container {
			msgs = append(msgs, pm)
		}
	}
	return msgs
}

// recorder is a handler that records its calls and fails when fail says so.
type recorder struct {
	mu    sync.Mutex
	calls []Blob
	fail  func(Blob) error
}

func (r *recorder) handle(_ context.Context, b Blob) error {
	r.mu.Lock()
	r.calls = append(r.calls, b)
	r.mu.Unlock()
	if r.fail != nil {
		return r.fail(b)
	}
	return nil
}

func (r *recorder) all() []Blob {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Blob(nil), r.calls...)
}

// names returns the blob names handled, in order.
func (r *recorder) names() []string {
	var out []string
	for _, b := range r.all() {
		out = append(out, b.Name)
	}
	return out
}

// scan runs one Scan and fails the test on error.
func scan(t *testing.T, w *Watcher, function string, p Pattern, r *recorder) Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := w.Scan(ctx, function, p, r.handle)
	if err != nil {
		t.Fatalf("Scan(%s, %s): %v", function, p, err)
	}
	return st
}
