package devhost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/offpath/offpath/internal/document"
)

// TestContract_NonASCIICorrelationID: a correlation id in any script set
// (percent-encoded) on the blob's metadata comes out in the claim check,
// the status, the result and the handler's logs.
func TestContract_NonASCIICorrelationID(t *testing.T) {
	t.Parallel()
	s, docs := startIngest(t, map[string]string{"OFFPATH_LOG_LEVEL": "info"}, nil)
	const id = "Zürich–Δ-0042"
	name := "acme/intl/zurich notes.txt"
	// Metadata travels in headers, which Azure Storage takes as ASCII: an
	// uploader percent-encodes other text.
	etag := drop(t, s, name, strings.Repeat("Notes from the Zürich office. ", 50), map[string]string{"correlation_id": url.PathEscape(id)})

	_, cc := claimCheck(t, s, etag)
	if cc["correlation_id"] != id {
		t.Errorf("claim check correlation_id = %v, want %q", cc["correlation_id"], id)
	}
	st := done(t, s, docs, name, etag)
	if st.State != document.Done || st.CorrelationID != id {
		t.Errorf("status = %+v, want done with correlation id %q", st, id)
	}
	container, result, _ := strings.Cut(st.Result, "/")
	b, err := s.Blobs.DownloadStream(context.Background(), container, result, nil)
	if err != nil {
		t.Fatalf("result: %v", err)
	}
	defer b.Body.Close()
	var head struct {
		CorrelationID string `json:"correlation_id"`
	}
	if err := json.NewDecoder(b.Body).Decode(&head); err != nil || head.CorrelationID != id {
		t.Errorf("result's first line correlation_id %q (%v), want %q", head.CorrelationID, err, id)
	}
	// Logs are JSON lines: the id appears as JSON text, escaped or not.
	quoted, _ := json.Marshal(id)
	if out := s.Output(); !strings.Contains(out, string(quoted)) && !strings.Contains(out, asciiJSON(id)) {
		t.Errorf("no log line carries %s", quoted)
	}
}

// asciiJSON is s as a JSON string with every non-ASCII rune \u-escaped.
func asciiJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
			continue
		}
		for _, u := range utf16.Encode([]rune{r}) {
			fmt.Fprintf(&b, `\u%04x`, u)
		}
	}
	b.WriteByte('"')
	return b.String()
}
