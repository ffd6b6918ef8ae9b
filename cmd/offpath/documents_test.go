package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/azurite"
	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/tablestore"
)

// fakeDevhost records what is sent to its Service Bus endpoint.
type fakeDevhost struct {
	mu   sync.Mutex
	sent map[string][][]byte
}

func (f *fakeDevhost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	queue, ok := strings.CutPrefix(r.URL.Path, "/devhost/servicebus/")
	if !ok || r.Method != http.MethodPost || r.Header.Get("x-functions-key") != "mkey" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sent == nil {
		f.sent = map[string][][]byte{}
	}
	f.sent[queue] = append(f.sent[queue], b)
	w.WriteHeader(http.StatusCreated)
}

func TestCLI_DocumentsStatusAndReprocess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	az := azurite.Start(t)
	env := map[string]string{"AzureWebJobsStorage": az.ConnectionString()}
	mustRun(t, env, "tenants", "create", "acme", "-aliases", "ingest")

	blobs, err := azblob.NewClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.CreateContainer(ctx, "incoming", nil); err != nil {
		t.Fatal(err)
	}
	up, err := blobs.UploadBuffer(ctx, "incoming", "acme/kb/a.md", []byte("# Title\n\nSome text."), nil)
	if err != nil {
		t.Fatal(err)
	}
	etag := strings.Trim(string(*up.ETag), `"`)
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: az.ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	docs := tablestore.NewDocuments(svc, "", nil)
	now := time.Now().UTC()
	if _, err := docs.Put(ctx, "acme/kb/a.md", document.Status{Tenant: "acme", Name: "acme/kb/a.md", ETag: etag, Size: 19,
		State: document.Rejected, Reason: "tenant suspended: tenant \"acme\" is suspended", Enqueued: now, Finished: now, Deliveries: 1}); err != nil {
		t.Fatal(err)
	}

	out := mustRun(t, env, "documents", "status", "acme/kb/a.md")
	for _, want := range []string{"state       rejected", "tenant suspended", etag, "19 bytes"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if out, err := offpath(t, env, "documents", "status", "acme/nothing.txt"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("status of an unknown document: %v\n%s", err, out)
	}
	if _, err := offpath(t, env, "documents", "status", "no-tenant.txt"); err == nil {
		t.Error("status of a name without a tenant folder: no error")
	}
	if out := mustRun(t, env, "documents", "list", "acme", "-state", "rejected"); !strings.Contains(out, "acme/kb/a.md") {
		t.Errorf("list:\n%s", out)
	}

	dh := &fakeDevhost{}
	srv := httptest.NewServer(dh)
	defer srv.Close()
	if _, err := offpath(t, env, "documents", "reprocess", "acme/kb/a.md"); err == nil || !strings.Contains(err.Error(), "-servicebus") {
		t.Errorf("reprocess without a destination: %v", err)
	}
	out = mustRun(t, env, "documents", "reprocess", "acme/kb/a.md", "-devhost", srv.URL, "-master-key", "mkey")
	if !strings.Contains(out, "re-enqueued to doc-ingest") {
		t.Errorf("reprocess printed:\n%s", out)
	}
	sent := dh.sent["doc-ingest"]
	if len(sent) != 1 {
		t.Fatalf("sent %d messages to doc-ingest, want 1", len(sent))
	}
	rules, _ := claimcheck.NewRules(claimcheck.Policy{AccountURL: strings.TrimSuffix(blobs.URL(), "/")})
	msg, err := rules.Decode(sent[0])
	if err != nil || msg.ETag != etag || msg.Tenant != "acme" || msg.Size != 19 {
		t.Errorf("sent claim check %s: %+v, %v", sent[0], msg, err)
	}
	if st, _ := docs.Get(ctx, "acme", "acme/kb/a.md"); st.State != document.Queued || st.Reason != "" {
		t.Errorf("status after reprocess = %+v, want queued", st)
	}

	// A document that is done needs -force; one that is still not
	// acceptable is refused with the reason.
	st, _ := docs.Get(ctx, "acme", "acme/kb/a.md")
	st.State = document.Done
	if _, err := docs.Put(ctx, "acme/kb/a.md", st); err != nil {
		t.Fatal(err)
	}
	if _, err := offpath(t, env, "documents", "reprocess", "acme/kb/a.md", "-devhost", srv.URL, "-master-key", "mkey"); err == nil || !strings.Contains(err.Error(), "-force") {
		t.Errorf("reprocess of a done document: %v", err)
	}
	mustRun(t, env, "tenants", "suspend", "acme")
	if _, err := offpath(t, env, "documents", "reprocess", "acme/kb/a.md", "-force", "-devhost", srv.URL, "-master-key", "mkey"); err == nil || !strings.Contains(err.Error(), "tenant suspended") {
		t.Errorf("reprocess for a suspended tenant: %v", err)
	}
	if len(dh.sent["doc-ingest"]) != 1 {
		t.Errorf("%d messages sent; a refused reprocess sent one", len(dh.sent["doc-ingest"]))
	}
}

type staticToken struct{}

func (staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "tok", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func TestServiceBusSender_REST(t *testing.T) {
	t.Parallel()
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, body = r, must(io.ReadAll(r.Body))
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	s := serviceBusSender{namespace: srv.URL, cred: staticToken{}, client: srv.Client()}
	if err := s.send(context.Background(), "doc-ingest", []byte(`{"version":1}`), "corr-1"); err != nil {
		t.Fatal(err)
	}
	var props map[string]string
	_ = json.Unmarshal([]byte(got.Header.Get("BrokerProperties")), &props)
	if got.URL.Path != "/doc-ingest/messages" || got.Header.Get("Authorization") != "Bearer tok" || string(body) != `{"version":1}` || props["CorrelationId"] != "corr-1" {
		t.Errorf("request %s %v %q %v", got.URL.Path, got.Header, body, props)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestASCIIJSON: a correlation id in any script reaches Service Bus's
// BrokerProperties header as ASCII that decodes to the same text.
func TestASCIIJSON(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"kb-7", "Zürich–Δ-0042", "東京 🚀 «x»"} {
		b, _ := json.Marshal(map[string]string{"CorrelationId": id})
		got := asciiJSON(b)
		for _, c := range got {
			if c >= 0x80 {
				t.Fatalf("asciiJSON(%s) = %s: not ASCII", b, got)
			}
		}
		var back map[string]string
		if err := json.Unmarshal(got, &back); err != nil || back["CorrelationId"] != id {
			t.Errorf("asciiJSON(%s) = %s, decodes to %q, %v", b, got, back["CorrelationId"], err)
		}
	}
}
