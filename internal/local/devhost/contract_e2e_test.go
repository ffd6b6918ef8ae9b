package devhost_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/devhost"
	"github.com/offpath/offpath/internal/local/sbemu"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/testing/apptest"
)

// The host contract, end to end: the real handler behind the dev host, on
// each shape the Storage extension sends a blob trigger in.

// enqueueFunction is ingest-enqueue's function.json with the trigger's
// source and deferred binding chosen (the repository's is EventGrid with
// supportsDeferredBinding).
func enqueueFunction(source string, deferred bool) string {
	props := ""
	if deferred {
		props = `, "properties": {"supportsDeferredBinding": true}`
	}
	return `{"bindings": [
		{"type": "blobTrigger", "direction": "in", "name": "blob", "path": "incoming/{name}",
		 "connection": "AzureWebJobsStorage", "source": "` + source + `", "dataType": "binary"` + props + `},
		{"type": "serviceBus", "direction": "out", "name": "light", "queueName": "doc-ingest", "connection": "ServiceBus"},
		{"type": "serviceBus", "direction": "out", "name": "heavy", "queueName": "doc-ingest-heavy", "connection": "ServiceBus"}]}`
}

func startIngest(t *testing.T, settings map[string]string, functions map[string]string) (*apptest.Stack, *tablestore.Documents) {
	t.Helper()
	s := apptest.Start(t, apptest.Config{
		Sim:      aoaisim.Config{DisableRateLimits: true},
		Settings: settings, Functions: functions, Tenants: map[string][]string{"acme": {"ingest"}},
	})
	if _, err := s.Blobs.CreateContainer(context.Background(), "incoming", nil); err != nil {
		t.Fatal(err)
	}
	return s, tablestore.NewDocuments(s.Tables, "", nil)
}

// drop uploads a document and returns the ETag storage reports for it.
func drop(t *testing.T, s *apptest.Stack, name, text string, metadata map[string]string) string {
	t.Helper()
	md := map[string]*string{}
	for k, v := range metadata {
		md[k] = &v
	}
	if _, err := s.Blobs.UploadBuffer(context.Background(), "incoming", name, []byte(text), &azblob.UploadBufferOptions{Metadata: md}); err != nil {
		t.Fatalf("upload %s: %v", name, err)
	}
	p, err := s.Blobs.ServiceClient().NewContainerClient("incoming").NewBlobClient(name).GetProperties(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Trim(string(*p.ETag), `"`)
}

// claimCheck waits for ingest-enqueue's message for the blob version and
// returns it with its decoded body.
func claimCheck(t *testing.T, s *apptest.Stack, etag string) (devhost.Event, map[string]any) {
	t.Helper()
	var body map[string]any
	e := s.Wait("the claim check for "+etag, func(e devhost.Event) bool {
		if e.Kind == devhost.Invoked && e.Function == "ingest-enqueue" && e.Outcome != "succeeded" {
			return true // the host failed the invocation: it will retry, then poison
		}
		if e.Kind != devhost.Sent || e.Function != "ingest-enqueue" {
			return false
		}
		body = nil
		if json.Unmarshal(e.Body, &body) != nil {
			return false
		}
		tag, _ := body["etag"].(string)
		return strings.Trim(tag, `"`) == etag
	})
	if e.Kind == devhost.Invoked {
		t.Fatalf("ingest-enqueue failed: %s", e.Err)
	}
	return e, body
}

// done waits for the document's status for the version to be final.
func done(t *testing.T, s *apptest.Stack, docs *tablestore.Documents, name, etag string) document.Status {
	t.Helper()
	// The worker's settlement comes after it wrote the final status.
	e := s.Wait("ingest-process to settle "+name, func(e devhost.Event) bool {
		return e.Kind == devhost.Settled && e.Function == "ingest-process" && e.Outcome != sbemu.Abandoned
	})
	if e.Outcome != sbemu.Completed || e.DeliveryCount != 1 {
		t.Fatalf("the claim check was %s at delivery %d, want completed at its first", e.Outcome, e.DeliveryCount)
	}
	st, err := docs.Get(context.Background(), "acme", name)
	if err != nil {
		t.Fatalf("status of %s: %v", name, err)
	}
	return st
}

// TestContract_BlobShapesReachDone: under each shape of the blob trigger a
// document dropped into incoming/ is enqueued with a claim check carrying
// the ETag storage reports, and processed to done.
func TestContract_BlobShapesReachDone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		settings  map[string]string
		functions map[string]string
	}{
		// The repository's function.json: Event Grid source, deferred binding.
		{"5.x Event Grid deferred descriptor", nil, nil},
		{"5.x Event Grid content inline", nil, map[string]string{"ingest-enqueue": enqueueFunction("EventGrid", false)}},
		{"5.x polling content inline", nil, map[string]string{"ingest-enqueue": enqueueFunction("LogsAndContainerScan", false)}},
		// 4.x knows neither the Event Grid source nor deferred binding.
		{"4.x older Properties", map[string]string{devhost.StorageExtensionSetting: "4"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, docs := startIngest(t, tc.settings, tc.functions)
			name := "acme/kb/returns policy.md"
			text := strings.Repeat("Returns are accepted within 30 days of delivery. ", 40)
			etag := drop(t, s, name, text, nil)

			_, cc := claimCheck(t, s, etag)
			if cc["size"] != float64(len(text)) {
				t.Errorf("claim check %v: size is not the blob's", cc)
			}
			st := done(t, s, docs, name, etag)
			if st.State != document.Done || !st.SameVersion(etag) || st.Deliveries != 1 {
				t.Errorf("status = %+v, want done for %s after one delivery", st, etag)
			}
			if _, dead, err := s.Broker.Count(context.Background(), "doc-ingest"); err != nil || dead != 0 {
				t.Errorf("%d dead letters (%v), want none", dead, err)
			}
		})
	}
}

// TestContract_GarbageMessageCompletedOnFirstDelivery: a message on the
// worker's queue that is no claim check is completed at DeliveryCount 1 (a
// recorded rejection), never retried into the dead-letter queue.
func TestContract_GarbageMessageCompletedOnFirstDelivery(t *testing.T) {
	t.Parallel()
	s, _ := startIngest(t, nil, nil)
	ctx := context.Background()
	for i, body := range []string{"not json at all", `{"version":1,"blob_url":42}`, `null`, "\xff\xfe\x00"} {
		id := "garbage-" + string(rune('a'+i))
		if err := s.Broker.Send(ctx, "doc-ingest", sbemu.Message{Body: []byte(body), MessageID: id}); err != nil {
			t.Fatal(err)
		}
		e := s.Wait("settlement of "+id, func(e devhost.Event) bool { return e.Kind == devhost.Settled && e.MessageID == id })
		if e.Outcome != sbemu.Completed || e.DeliveryCount != 1 {
			t.Errorf("%q: %s at delivery %d, want completed at the first", body, e.Outcome, e.DeliveryCount)
		}
	}
	if active, dead, err := s.Broker.Count(ctx, "doc-ingest"); err != nil || active != 0 || dead != 0 {
		t.Errorf("doc-ingest holds %d active and %d dead-lettered messages (%v), want none", active, dead, err)
	}
}
