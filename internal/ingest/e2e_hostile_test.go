package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/local/sbemu"
)

// TestE2E_HostileInput: uploads and messages that can never succeed are
// rejected with a reason, once, and nothing crashes; legitimate oddities (a
// 10 MB single line, a 1,000-character name) are processed.
func TestE2E_HostileInput(t *testing.T) {
	t.Parallel()
	const limit = 12 << 20
	s := newStack(t, stackOptions{settings: map[string]string{"OFFPATH_INGEST_MAX_BYTES": "12582912"}})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 8<<10)
	for i := range garbage {
		garbage[i] = byte(rng.UintN(256))
	}
	oneLine := bytes.Repeat([]byte("word "), 2<<20) // 10 MiB, no newline
	longName := "acme/" + strings.Repeat("l", 1000) + ".txt"

	type want struct {
		partition string
		state     document.State
		reason    string
	}
	uploads := []struct {
		name string
		data []byte
		want want
	}{
		{"ghost/a.txt", prose(100), want{document.Unattributed, document.Rejected, "unknown tenant"}},
		{"sleepy/a.txt", prose(100), want{"sleepy", document.Rejected, "tenant suspended"}},
		{"acme/zero.txt", nil, want{"acme", document.Rejected, "empty document"}},
		{"acme/blank.md", []byte(" \n\n\t \n"), want{"acme", document.Rejected, "empty document"}},
		{"acme/over.txt", bytes.Repeat([]byte("x"), limit+1), want{"acme", document.Rejected, "document too large"}},
		{"acme/garbage.txt", garbage, want{"acme", document.Rejected, "binary content"}},
		{"acme/latin1.txt", append(prose(2000), []byte("caf\xe9 cr\xe8me")...), want{"acme", document.Rejected, "not UTF-8 text"}},
		{"acme/%2e%2e/escape.txt", prose(100), want{"acme", document.Rejected, "invalid blob name"}},
		// The host's blob path tokens do not match a newline, so it never
		// invokes the function for this name (the dev host neither): it is
		// not processed, and its claim check below is rejected.
		{"acme/new\nline.txt", prose(100), want{"acme", "", ""}},
		{"acme/photo.png", []byte("\x89PNG\r\n"), want{"acme", document.Rejected, "unsupported document type"}},
		{"toplevel.txt", prose(100), want{document.Unattributed, document.Rejected, "blob outside a tenant folder"}},
		{"acme/one-line.txt", oneLine, want{"acme", document.Done, ""}},
		{longName, prose(3000), want{"acme", document.Done, ""}},
	}
	etags := map[string]string{}
	for _, u := range uploads {
		etag, err := s.upload(u.name, u.data, nil)
		if err != nil {
			t.Logf("the storage refused the name %q: %v", u.name, err)
			continue
		}
		etags[u.name] = etag
	}

	// Claim checks that name nothing they may touch, sent straight to the queue.
	account := s.results.AccountURL()
	claim := func(tenantID, blobURL string) []byte {
		b, _ := json.Marshal(map[string]any{"version": 1, "blob_url": blobURL, "etag": "0x1", "size": 10,
			"tenant": tenantID, "model_alias": "ingest", "correlation_id": "hostile"})
		return b
	}
	messages := map[string][]byte{
		"not-json":        []byte("please process /etc/passwd"),
		"outside":         claim("acme", account+"/ingested/acme/x.txt.jsonl"),
		"other-tenant":    claim("acme", account+"/incoming/sleepy/a.txt"),
		"traversal":       claim("acme", account+"/incoming/acme/"+url.PathEscape("..")+"/sleepy/a.txt"),
		"inline-document": []byte(`{"version":1,"document":"the whole text"}`),
		"newline":         claim("acme", account+"/incoming/acme/new%0Aline.txt"),
	}
	for id, body := range messages {
		if err := s.broker.Send(ctx, "doc-ingest", sbemu.Message{Body: body, MessageID: "hostile-" + id}); err != nil {
			t.Fatal(err)
		}
	}

	for _, u := range uploads {
		etag, ok := etags[u.name]
		if !ok || u.want.state == "" {
			continue
		}
		st := s.final(u.want.partition, u.name, etag, 90*time.Second)
		if st.State != u.want.state || !strings.Contains(st.Reason, u.want.reason) {
			t.Errorf("%.60q: %s (%s), want %s (%s)", u.name, st.State, st.Reason, u.want.state, u.want.reason)
		}
		if st.Deliveries > 1 {
			t.Errorf("%.60q: %d deliveries: a rejection was retried", u.name, st.Deliveries)
		}
	}
	for id := range messages {
		st := s.final(document.Unattributed, "message hostile-"+id, "", 30*time.Second)
		if st.State != document.Rejected || st.Deliveries != 1 || st.Tenant != "" {
			t.Errorf("message %s: %+v, want rejected once, unattributed", id, st)
		}
	}
	if st, err := s.docs.Get(ctx, "sleepy", "sleepy/a.txt"); err != nil || st.Reason != "tenant suspended: tenant \"sleepy\" is suspended" {
		t.Errorf("a hostile message changed another tenant's document: %+v, %v", st, err)
	}
	if _, err := s.docs.Get(ctx, "acme", "acme/new\nline.txt"); err == nil {
		t.Error("a name with a newline was processed")
	}
	if line := s.final("acme", "acme/one-line.txt", etags["acme/one-line.txt"], time.Second); line.Queue != "doc-ingest-heavy" || line.Chunks < 5000 {
		t.Errorf("the 10 MB line: %+v", line)
	}
	for _, q := range []string{"doc-ingest", "doc-ingest-heavy"} {
		if dead := s.deadLettered(q); dead != 0 {
			t.Errorf("%s: %d dead letters", q, dead)
		}
	}
	if n := strings.Count(s.out.String(), `"handler listening"`); n != 1 {
		t.Errorf("the handler started %d times: it crashed", n)
	}
}
