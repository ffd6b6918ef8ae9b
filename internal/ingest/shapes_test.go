package ingest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/invoke"
	"github.com/offpath/offpath/internal/tenant"
)

// TestEnqueueFunc_EveryHostShape sends the enqueue function every blob
// trigger envelope the host is known to send (the golden envelopes of
// package invoke: the older SDK's Properties, the 5.x extension's, deferred
// descriptors, the Event Grid source, a BlobCreated event itself), each
// pointed at a blob in Azurite that was replaced after the envelope was
// made. Each gives the same claim check: the ETag, size and content type
// storage reports for the version there now, never the envelope's, and the
// correlation id of its metadata.
func TestEnqueueFunc_EveryHostShape(t *testing.T) {
	t.Parallel()
	client, err := azblob.NewClientFromConnectionString(shared.Get(t).ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.CreateContainer(ctx, claimcheck.DefaultContainer, nil); err != nil {
		t.Fatal(err)
	}
	store := blobstore.NewDocuments(client, claimcheck.DefaultContainer, ingest.DefaultResultsContainer, 0)
	rules, err := claimcheck.NewRules(claimcheck.Policy{AccountURL: store.AccountURL()})
	if err != nil {
		t.Fatal(err)
	}
	statuses := &memStatuses{}
	enq, err := ingest.NewEnqueuer(ingest.Options{Rules: rules, Catalog: testCatalog(t), Statuses: statuses, Blobs: store,
		Tenants: &memTenants{m: map[string]tenant.Tenant{"contoso": {ID: "contoso", State: tenant.Active, Aliases: []string{"ingest"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	mux := invoke.NewMux(zerolog.New(io.Discard), invoke.Options{Rejections: enq.Rejections()})
	mux.HandleTrigger(ingest.EnqueueFunction, invoke.BlobTrigger, ingest.BlobBinding, ingest.EnqueueFunc(enq))

	files, err := filepath.Glob("../invoke/testdata/blob-*.json")
	if err != nil || len(files) < 6 {
		t.Fatalf("golden blob envelopes: %v, %v", files, err)
	}
	for i, file := range files {
		golden, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// The blob the envelope names, uploaded twice: the envelope is about
		// the first version, storage holds the second.
		name := "contoso/shape-" + strconv.Itoa(i) + "/" + strings.TrimSuffix(filepath.Base(file), ".json") + " notes.md"
		body := []byte("# " + file + "\n\nThe second version of the document, longer than the first.\n")
		corr := "Zürich–Δ-" + strconv.Itoa(i)
		upload := func(b []byte) string {
			t.Helper()
			md := map[string]*string{"correlation_id": ptr(url.PathEscape(corr))}
			ct := "text/markdown"
			res, err := client.UploadBuffer(ctx, claimcheck.DefaultContainer, name, b, &azblob.UploadBufferOptions{Metadata: md, HTTPHeaders: &blob.HTTPHeaders{BlobContentType: &ct}})
			if err != nil {
				t.Fatal(err)
			}
			return strings.Trim(string(*res.ETag), `"`)
		}
		first := upload([]byte("v1"))
		etag := upload(body)
		env := retarget(t, golden, store.AccountURL(), name, first)

		res, reply := invokeEnqueue(t, mux, env)
		var out struct{ Outputs map[string]json.RawMessage }
		if res != http.StatusOK || json.Unmarshal(reply, &out) != nil {
			t.Errorf("%s: %d %s", file, res, reply)
			continue
		}
		var b64 string
		if err := json.Unmarshal(out.Outputs[ingest.LightOutput], &b64); err != nil {
			t.Errorf("%s: no claim check in %s", file, reply)
			continue
		}
		raw, _ := base64.StdEncoding.DecodeString(b64)
		msg, err := rules.Decode(raw)
		if err != nil {
			t.Errorf("%s: claim check %s: %v", file, raw, err)
			continue
		}
		want, _ := rules.ParseName(name)
		if msg.ETag != etag || msg.Size != int64(len(body)) || msg.ContentType != "text/markdown" || msg.Tenant != "contoso" ||
			msg.CorrelationID != corr || msg.BlobURL != rules.BlobURL(want) {
			t.Errorf("%s: claim check %+v; want version %s, %d bytes, text/markdown, correlation id %q", file, msg, etag, len(body), corr)
		}
	}

	// A blob that is gone by the time its event is handled is a recorded
	// rejection, answered 2xx.
	env := retarget(t, mustRead(t, "../invoke/testdata/blob-5x-deferred.json"), store.AccountURL(), "contoso/gone.md", "0x1")
	if res, reply := invokeEnqueue(t, mux, env); res != http.StatusOK || bytes.Contains(reply, []byte(ingest.LightOutput)) {
		t.Errorf("gone blob: %d %s; want 200 and no claim check", res, reply)
	}
	if st, err := statuses.Get(ctx, "contoso", "contoso/gone.md"); err != nil || !strings.Contains(st.Reason, "blob is gone") {
		t.Errorf("gone blob: status %+v, %v; want rejected: blob is gone", st, err)
	}
}

// retarget points a golden blob envelope at name in the account and puts
// etag wherever the envelope has an ETag string.
func retarget(t *testing.T, golden []byte, account, name, etag string) []byte {
	t.Helper()
	var env map[string]map[string]any
	if err := json.Unmarshal(golden, &env); err != nil {
		t.Fatal(err)
	}
	escaped := (&url.URL{Path: name}).EscapedPath()
	u := account + "/" + claimcheck.DefaultContainer + "/" + escaped
	q := func(s string) string { return strconv.Quote(s) } // the host's double encoding
	meta := env["Metadata"]
	for k := range meta {
		switch k {
		case "Uri":
			meta[k] = q(u)
		case "BlobTrigger":
			meta[k] = q(claimcheck.DefaultContainer + "/" + name)
		case "name":
			meta[k] = q(name)
		case "Properties":
			if p, ok := meta[k].(map[string]any); ok {
				if _, ok := p["ETag"].(string); ok {
					p["ETag"] = `"` + etag + `"`
				}
			}
		}
	}
	if events, ok := env["Data"]["blob"].([]any); ok {
		ev := events[0].(map[string]any)
		ev["subject"] = "/blobServices/default/containers/" + claimcheck.DefaultContainer + "/blobs/" + name
		data := ev["data"].(map[string]any)
		data["url"], data["eTag"] = u, `"`+etag+`"`
	}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func invokeEnqueue(t *testing.T, mux http.Handler, env []byte) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/"+ingest.EnqueueFunction, bytes.NewReader(env))
	req.Header.Set("X-Azure-Functions-InvocationId", "shape-test")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ptr[T any](v T) *T { return &v }
