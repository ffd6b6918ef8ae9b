package openaiapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/object"
)

// harvestedBatches holds harvested jobs; nothing may be submitted.
type harvestedBatches struct {
	refusingBatches
	jobs map[string]batch.Job // by tenant/id
}

func (b harvestedBatches) Get(_ context.Context, tenantID, id string) (batch.Job, error) {
	if j, ok := b.jobs[tenantID+"/"+id]; ok {
		return j, nil
	}
	return batch.Job{}, batch.ErrNotFound
}

// TestExpiredFilesAreGoneAndSwept: past its expires_at a door file (an
// upload, a job's output file) is answered 404 in OpenAI's shape and left
// out of the list, and the sweep deletes its blobs, a bounded number per
// run, oldest first; files before their expiry, without one, or of another
// tenant are served and kept, and the control plane's results are never
// touched.
func TestExpiredFilesAreGoneAndSwept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	az := azurite.Start(t)
	client, err := azblob.NewClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	models, err := os.ReadFile("../../models.json")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse(models)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(start.Unix())
	now := func() time.Time { return time.Unix(clock.Load(), 0) }

	jobID, err := batch.NewJobID(start, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	job := batch.Job{ID: jobID, Tenant: "contoso", Alias: "summarize", State: batch.Harvested, Final: batch.Completed,
		Created: start, HarvestedAt: start, Attributes: map[string]string{attrOutputExpiry: strconv.Itoa(minFileExpiry)}}
	store := blobstore.New(client, blobstore.Options{})
	door := New(Options{Auth: stubAuth{}, Tenants: stubTenants{}, Blobs: store, Catalog: cat, Now: now,
		Batches: harvestedBatches{refusingBatches{t}, map[string]batch.Job{"contoso/" + jobID: job}}})
	srv := httptest.NewServer(door)
	defer srv.Close()

	// The control plane's own result of the job, which must outlive the
	// output file.
	results := "contoso/" + jobID + "/results.jsonl"
	w, err := store.Create(ctx, batch.DefaultResultsContainer, results, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	call := func(method, path, tenantID string, body io.Reader, ctype string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+"/api/openai/v1/"+path, body)
		req.Header.Set("Authorization", "Bearer "+tenantID)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	line := `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"summarize","messages":[{"role":"user","content":"hi"}]}}` + "\n"
	uploadFor := func(tenantID string, seconds int) string {
		t.Helper()
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		_ = mw.WriteField("purpose", "batch")
		if seconds > 0 {
			_ = mw.WriteField("expires_after[anchor]", "created_at")
			_ = mw.WriteField("expires_after[seconds]", strconv.Itoa(seconds))
		}
		fw, _ := mw.CreateFormFile("file", "in.jsonl")
		_, _ = io.WriteString(fw, line)
		_ = mw.Close()
		status, body := call("POST", "files", tenantID, &b, mw.FormDataContentType())
		var f fileObject
		if err := json.Unmarshal(body, &f); status != 200 || err != nil {
			t.Fatalf("upload: %d %s", status, body)
		}
		return f.ID
	}
	expiring := uploadFor("contoso", minFileExpiry)
	kept := uploadFor("contoso", 0)
	later := uploadFor("contoso", maxFileExpiry)
	theirs := uploadFor("fabrikam", minFileExpiry+60)
	theirsKept := uploadFor("fabrikam", 0)
	output := outputFileIDOf(jobID, kindOutput)

	served := func(tenantID, id string) {
		t.Helper()
		if status, body := call("GET", "files/"+id, tenantID, nil, ""); status != 200 {
			t.Errorf("GET %s of %s: %d %s, want 200", id, tenantID, status, body)
		}
		if status, body := call("GET", "files/"+id+"/content", tenantID, nil, ""); status != 200 {
			t.Errorf("content of %s of %s: %d %s, want 200", id, tenantID, status, body)
		}
	}
	gone := func(tenantID, id string) {
		t.Helper()
		for _, path := range []string{"files/" + id, "files/" + id + "/content"} {
			status, body := call("GET", path, tenantID, nil, "")
			var e errorBody
			if err := json.Unmarshal(body, &e); status != 404 || err != nil || e.Error.Code != "not_found" {
				t.Errorf("GET %s: %d %s, want 404 not_found", path, status, body)
			}
		}
	}
	listed := func(tenantID string) map[string]bool {
		t.Helper()
		status, body := call("GET", "files", tenantID, nil, "")
		var page listPage[fileObject]
		if err := json.Unmarshal(body, &page); status != 200 || err != nil {
			t.Fatalf("list: %d %s", status, body)
		}
		ids := map[string]bool{}
		for _, f := range page.Data {
			ids[f.ID] = true
		}
		return ids
	}
	exists := func(container, name string) bool {
		t.Helper()
		_, err := store.Stat(ctx, container, name)
		if err != nil && !errors.Is(err, object.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	uploadBlobs := func(tenantID, id string) []string {
		return []string{fileBlob(tenantID, id, "file.json"), fileBlob(tenantID, id, "items.jsonl"), fileBlob(tenantID, id, "input.jsonl")}
	}

	// A second before the expiry everything is served (the output file is
	// written now, with its expiry), and the sweep deletes nothing.
	clock.Store(start.Unix() + minFileExpiry - 1)
	for _, id := range []string{expiring, kept, later, output} {
		served("contoso", id)
	}
	served("fabrikam", theirs)
	if n, err := door.Sweep(ctx, 0); n != 0 || err != nil {
		t.Fatalf("sweep before the expiry: %d, %v", n, err)
	}
	outBlob := outputBlob("contoso", jobID, kindOutput)
	if !exists(batch.DefaultResultsContainer, outBlob) {
		t.Fatal("the output file was not written")
	}

	// At the expiry the file and the output are gone, at once, before any
	// sweep.
	clock.Store(start.Unix() + minFileExpiry)
	gone("contoso", expiring)
	gone("contoso", output)
	if ids := listed("contoso"); ids[expiring] || !ids[kept] || !ids[later] {
		t.Errorf("list after the expiry: %v, want %s and %s without %s", ids, kept, later, expiring)
	}
	if status, body := call("DELETE", "files/"+expiring, "contoso", nil, ""); status != 404 {
		t.Errorf("DELETE of an expired file: %d %s, want 404", status, body)
	}
	served("fabrikam", theirs)
	served("fabrikam", theirsKept)

	// The sweep deletes the two, one per run when so bounded.
	for i, want := range []int{1, 1, 0} {
		if n, err := door.Sweep(ctx, 1); n != want || err != nil {
			t.Fatalf("sweep %d: %d, %v; want %d", i, n, err, want)
		}
	}
	for _, b := range uploadBlobs("contoso", expiring) {
		if exists(batch.DefaultUploadsContainer, b) {
			t.Errorf("%s outlived its expiry", b)
		}
	}
	if exists(batch.DefaultResultsContainer, outBlob) {
		t.Errorf("%s outlived its expiry", outBlob)
	}
	if !exists(batch.DefaultResultsContainer, results) {
		t.Error("the sweep deleted the control plane's results")
	}
	for _, f := range []struct{ tenant, id string }{{"contoso", kept}, {"contoso", later}, {"fabrikam", theirs}, {"fabrikam", theirsKept}} {
		for _, b := range uploadBlobs(f.tenant, f.id) {
			if !exists(batch.DefaultUploadsContainer, b) {
				t.Errorf("%s deleted before its expiry", b)
			}
		}
	}
	served("contoso", kept)
	served("contoso", later)
	served("fabrikam", theirs)
	// The job still answers; its output file stays gone, never rewritten.
	gone("contoso", output)
	if exists(batch.DefaultResultsContainer, outBlob) {
		t.Error("the expired output file was written again")
	}

	// Fabrikam's file goes in its turn.
	clock.Store(start.Unix() + minFileExpiry + 60)
	gone("fabrikam", theirs)
	if n, err := door.Sweep(ctx, 0); n != 1 || err != nil {
		t.Fatalf("sweep of fabrikam's file: %d, %v", n, err)
	}
	served("fabrikam", theirsKept)
}

var _ Batches = harvestedBatches{}
