package tickets_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/tickets"
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

// newContainer creates a fresh container on the shared Azurite.
func newContainer(tb testing.TB) *container.Client {
	tb.Helper()
	client, err := azblob.NewClientFromConnectionString(sharedAzurite(tb).ConnectionString(), nil)
	if err != nil {
		tb.Fatalf("blob client: %v", err)
	}
	c := client.ServiceClient().NewContainerClient(azurite.Name(tb))
	if _, err := c.Create(tb.Context(), nil); err != nil {
		tb.Fatalf("create container: %v", err)
	}
	return c
}

// put uploads blobs, name → content.
func put(tb testing.TB, c *container.Client, blobs map[string]string) {
	tb.Helper()
	for name, content := range blobs {
		if _, err := c.NewBlockBlobClient(name).UploadBuffer(tb.Context(), []byte(content), nil); err != nil {
			tb.Fatalf("upload %s: %v", name, err)
		}
	}
}

// lines joins JSONL lines.
func lines(l ...string) string { return strings.Join(l, "\n") + "\n" }

// day is the day the tests collect: "2026-03-14/".
func day() time.Time { return time.Date(2026, 3, 14, 23, 30, 0, 0, time.UTC) }

// collected is what one Collect gave.
type collected struct {
	tickets []tickets.Ticket
	res     tickets.Result
}

func (c collected) ids() string {
	var ids []string
	for _, t := range c.tickets {
		ids = append(ids, t.ID)
	}
	return strings.Join(ids, ",")
}

// collect runs a Collector to the end.
func collect(t *testing.T, c *container.Client, seen tickets.Summarised, opts tickets.Options) collected {
	t.Helper()
	var got collected
	res, err := tickets.NewCollector(blobstore.NewContainer(c), seen, opts).Collect(t.Context(), day(), func(tk tickets.Ticket) error {
		got.tickets = append(got.tickets, tk)
		return nil
	})
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	got.res = res
	return got
}

// memory is a Summarised held in memory, safe for concurrent use.
type memory struct {
	mu     sync.RWMutex
	hashes map[string]string
}

func newMemory() *memory { return &memory{hashes: make(map[string]string)} }

// Record notes that the version of ticket id with the given hash has been
// summarised, replacing any earlier record.
func (m *memory) Record(id, hash string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hashes[id] = hash
}

func (m *memory) Seen(_ context.Context, id string) (string, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	h, ok := m.hashes[id]
	return h, ok, nil
}
