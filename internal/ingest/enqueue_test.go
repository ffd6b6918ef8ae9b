package ingest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/outcome"
)

func TestEnqueue_RoutesBySize(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		size  int64
		queue string
	}{{"acme/small.txt", 1, "doc-ingest"}, {"acme/edge.csv", 1<<20 - 1, "doc-ingest"}, {"acme/big.json", 1 << 20, "doc-ingest-heavy"}} {
		c, err := f.enq.Enqueue(ctx, ingest.Upload{Name: tc.name, ETag: `"0x1"`, Size: tc.size, Metadata: map[string]string{"correlation_id": "upload-42"}}, false)
		if err != nil || c.Queue != tc.queue || c.Message.CorrelationID != "upload-42" || c.Message.ETag != "0x1" || len(c.Body) > 4096 {
			t.Errorf("Enqueue(%s, %d bytes) = %+v, %v; want queue %s", tc.name, tc.size, c, err, tc.queue)
		}
		if strings.Contains(string(c.Body), "Sentence") {
			t.Errorf("the claim check carries content: %s", c.Body)
		}
		st, err := f.statuses.Get(ctx, "acme", tc.name)
		if err != nil || st.State != document.Queued || st.Queue != tc.queue || st.CorrelationID != "upload-42" {
			t.Errorf("status of %s = %+v, %v", tc.name, st, err)
		}
	}
	// A bad correlation id is replaced, not trusted.
	c, err := f.enq.Enqueue(ctx, ingest.Upload{Name: "acme/x.txt", ETag: "0x2", Size: 10, Metadata: map[string]string{"CorrelationId": "a b\nc"}}, false)
	if err != nil || len(c.Message.CorrelationID) != 32 {
		t.Errorf("bad correlation id: %+v, %v", c.Message, err)
	}
}

func TestEnqueue_HostileUploadsAreRejectedAndRecorded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	tooLong := "acme/" + strings.Repeat("n", 1020) + ".txt"       // 1,029 bytes: more than Azure allows
	resultTooLong := "acme/" + strings.Repeat("n", 1010) + ".txt" // its result's name would be
	tests := []struct {
		name      string
		size      int64
		reason    string
		partition string
	}{
		{"ghost/a.txt", 10, "unknown tenant", "ghost"},
		{"sleep/a.txt", 10, "tenant suspended", "sleep"},
		{"nope/a.txt", 10, "alias not allowed", "nope"},
		{"acme/zero.txt", 0, "empty document", "acme"},
		{"acme/huge.txt", 64<<20 + 1, "document too large", "acme"},
		{"acme/tool.exe", 10, "unsupported document type", "acme"},
		{"acme/scan.pdf", 10, "unsupported document type", "acme"},
		{"acme/noext", 10, "unsupported document type", "acme"},
		{"acme/../other/a.txt", 10, "invalid blob name", "acme"},
		{"acme/%2e%2e/other/a.txt", 10, "invalid blob name", "acme"},
		{"acme/%252e%252e/a.txt", 10, "invalid blob name", "acme"},
		{"acme/new\nline.txt", 10, "invalid blob name", "acme"},
		{"acme/bidi\u202etxt.exe", 10, "invalid blob name", "acme"},
		{tooLong, 10, "invalid blob name", "acme"},
		{resultTooLong, 10, "result's name would be longer", "acme"},
		{"toplevel.txt", 10, "blob outside a tenant folder", document.Unattributed},
		{"../acme/a.txt", 10, "invalid blob name", document.Unattributed},
		{"Acme/a.txt", 10, "invalid tenant folder", document.Unattributed},
		{"acme/bad\xffutf8.txt", 10, "invalid blob name", "acme"},
	}
	for _, tt := range tests {
		c, err := f.enq.Enqueue(ctx, ingest.Upload{Name: tt.name, ETag: "0x9", Size: tt.size}, false)
		if outcome.Of(err) != outcome.Rejected || !strings.Contains(err.Error(), tt.reason) || c.Queue != "" {
			t.Errorf("Enqueue(%q) = %+v, %v; want rejected: %s", tt.name, c, err, tt.reason)
			continue
		}
		st, err := f.statuses.Get(ctx, tt.partition, tt.name)
		if err != nil || st.State != document.Rejected || !strings.Contains(st.Reason, tt.reason) || st.Name != document.Printable(tt.name) {
			t.Errorf("status of %q = %+v, %v", tt.name, st, err)
		}
	}
	for _, st := range f.statuses.all() {
		if st.Tenant == "other" {
			t.Errorf("a hostile name wrote a status for another tenant: %+v", st)
		}
	}
	// A long name within the limits is a name like any other.
	long := "acme/" + strings.Repeat("n", 1000) + ".txt"
	if c, err := f.enq.Enqueue(ctx, ingest.Upload{Name: long, ETag: "0x9", Size: 10}, false); err != nil || c.Queue != "doc-ingest" {
		t.Errorf("Enqueue(1,009-byte name) = %v", err)
	}
}
