package apptest

import (
	"context"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/testing/poll"
)

// DeadLetter drops a document into the incoming container, waits for the
// queue path to finish with it, and records that version dead-lettered
// with reason, as a transient failure on its queue's last delivery would:
// a document for a test of what follows (listing, reprocess). The
// document's tenant must be one the queue path ends quickly for (one
// without the ingestion alias: rejected). It returns the dead-lettered
// status.
func (s *Stack) DeadLetter(name string, body []byte, reason string) document.Status {
	s.tb.Helper()
	ctx := context.Background()
	_, _ = s.Blobs.CreateContainer(ctx, claimcheck.DefaultContainer, nil)
	up, err := s.Blobs.UploadBuffer(ctx, claimcheck.DefaultContainer, name, body, nil)
	if err != nil {
		s.tb.Fatal(err)
	}
	etag := strings.Trim(string(*up.ETag), `"`)
	partition, _, _ := strings.Cut(name, "/")
	docs := tablestore.NewDocuments(s.Tables, "", nil)
	var st document.Status
	poll.Until(s.tb, 30*time.Second, "the status of "+name, func() bool {
		st, err = docs.Get(ctx, partition, name)
		return err == nil && st.State.Final() && st.SameVersion(etag)
	})
	st.State, st.Reason, st.Deliveries = document.DeadLettered, reason, 5
	if _, err := docs.Put(ctx, name, st); err != nil {
		s.tb.Fatal(err)
	}
	return st
}
