package ingest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/document"
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
		etag := f.blobs.putSized(tc.name, tc.size, map[string]string{"correlation_id": "upload-42"})
		c, err := f.enq.Enqueue(ctx, tc.name, false)
		if err != nil || c.Queue != tc.queue || c.Message.CorrelationID != "upload-42" || c.Message.ETag != etag || c.Message.Size != tc.size || len(c.Body) > 4096 {
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
}

// TestEnqueue_CorrelationIDs: any printable text of up to 128 characters,
// raw or percent-encoded, is the document's correlation id; anything else is
// replaced by a new one, and the status says why.
func TestEnqueue_CorrelationIDs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	tests := []struct {
		value, want, note string
	}{
		{"Zürich–Δ-0042", "Zürich–Δ-0042", ""},
		{"Z%C3%BCrich%E2%80%93%CE%94-0042", "Zürich–Δ-0042", ""},
		{"order 7/9, «urgent» 東京", "order 7/9, «urgent» 東京", ""},
		{"100% sure", "100% sure", ""}, // no valid escape: taken as it is
		{"a%2Fb%20c", "a/b c", ""},
		{strings.Repeat("Δ", 128), strings.Repeat("Δ", 128), ""},
		{strings.Repeat("Δ", 129), "", "longer than 128 characters"},
		{"a\nb", "", "control or format characters"},
		{"a%0Ab", "", "control or format characters"},
		{"a\u202eb", "", "control or format characters"},
		{"a\u200db", "", "control or format characters"},
		{"bad\xffutf8", "", "is not UTF-8"},
		{"%FF", "%FF", ""}, // decodes to no UTF-8: taken as it is
		{"   ", "", "is blank"},
	}
	for i, tt := range tests {
		name := fmt.Sprintf("acme/corr-%d.txt", i)
		f.blobs.putSized(name, 10, map[string]string{"correlation_id": tt.value})
		c, err := f.enq.Enqueue(ctx, name, false)
		if err != nil {
			t.Fatalf("Enqueue(%q) = %v", tt.value, err)
		}
		st, _ := f.statuses.Get(ctx, "acme", name)
		got := c.Message.CorrelationID
		if tt.want != "" {
			if got != tt.want || st.CorrelationID != tt.want || st.CorrelationNote != "" {
				t.Errorf("correlation id %q: claim %q, status %q (%s); want %q", tt.value, got, st.CorrelationID, st.CorrelationNote, tt.want)
			}
			continue
		}
		if len(got) != 32 || st.CorrelationID != got || !strings.Contains(st.CorrelationNote, tt.note) || !strings.HasPrefix(st.CorrelationNote, "generated") {
			t.Errorf("correlation id %q: claim %q, status %q (%q); want a new id and a note: %s", tt.value, got, st.CorrelationID, st.CorrelationNote, tt.note)
		}
	}
	f.blobs.putSized("acme/none.txt", 10, nil)
	if c, err := f.enq.Enqueue(ctx, "acme/none.txt", false); err != nil || len(c.Message.CorrelationID) != 32 {
		t.Errorf("no correlation id: %+v, %v; want a new one", c.Message, err)
	} else if st, _ := f.statuses.Get(ctx, "acme", "acme/none.txt"); st.CorrelationNote != "" {
		t.Errorf("no correlation id: note %q, want none", st.CorrelationNote)
	}
}

// TestEnqueue_PropertiesComeFromStorage: the claim check is made from the
// blob as storage reports it, and a blob that is gone is a recorded
// rejection.
func TestEnqueue_PropertiesComeFromStorage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	f.blobs.put("acme/a.md", []byte("# title"))
	etag := f.blobs.put("acme/a.md", []byte("# a newer version")) // replaced before the event was handled
	c, err := f.enq.Enqueue(ctx, "acme/a.md", false)
	if err != nil || c.Message.ETag != etag || c.Message.Size != int64(len("# a newer version")) {
		t.Errorf("Enqueue = %+v, %v; want version %s as stored", c.Message, err, etag)
	}
	_, err = f.enq.Enqueue(ctx, "acme/gone.txt", false)
	st, serr := f.statuses.Get(ctx, "acme", "acme/gone.txt")
	if outcome.Of(err) != outcome.Rejected || serr != nil || st.State != document.Rejected || !strings.Contains(st.Reason, "blob is gone") {
		t.Errorf("a blob that is gone: %v; status %+v, %v; want a recorded rejection", err, st, serr)
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
		{"ghost/a.txt", 10, "unknown tenant", document.Unattributed}, // no such tenant: nobody's partition
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
		f.blobs.putSized(tt.name, tt.size, nil)
		c, err := f.enq.Enqueue(ctx, tt.name, false)
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
	f.blobs.putSized(long, 10, nil)
	if c, err := f.enq.Enqueue(ctx, long, false); err != nil || c.Queue != "doc-ingest" {
		t.Errorf("Enqueue(1,009-byte name) = %v", err)
	}
}
