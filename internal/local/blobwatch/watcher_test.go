package blobwatch

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/offpath/offpath/internal/local/azurite"
)

func TestScan_FiresOncePerETag(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.watcher(Options{})
	p := e.pattern(t, "{name}")
	var r recorder
	first := e.put(t, "a.txt", "one", nil)

	for i := range 3 {
		st := scan(t, w, "Ingest", p, &r)
		if want := (Stats{Matched: 1, Fired: min(1, 1-i), Succeeded: min(1, 1-i)}); i > 0 && st != (Stats{Matched: 1}) || i == 0 && st != want {
			t.Fatalf("scan %d: stats %+v", i+1, st)
		}
	}
	if got := r.all(); len(got) != 1 || got[0].ETag != strings.Trim(first, `"`) {
		t.Fatalf("after 3 scans: %d calls %+v, want 1 for ETag %s", len(got), got, first)
	}
	receipt := "blobreceipts/devhost/Host.Functions.Ingest/" + strings.Trim(first, `"`) + "/" + e.container + "/a.txt"
	props, err := e.blobs.ServiceClient().NewContainerClient("azure-webjobs-hosts").NewBlobClient(receipt).GetProperties(context.Background(), nil)
	if err != nil {
		t.Fatalf("receipt %s: %v", receipt, err)
	}
	if len(props.Metadata) != 0 {
		t.Errorf("completed receipt has metadata %v, want none (the host reads no Incomplete key as complete)", props.Metadata)
	}

	second := e.put(t, "a.txt", "two", nil) // overwrite: new ETag
	if second == first {
		t.Fatalf("overwrite kept ETag %s", first)
	}
	scan(t, w, "Ingest", p, &r)
	scan(t, w, "Ingest", p, &r)
	if got := r.all(); len(got) != 2 || got[1].ETag != strings.Trim(second, `"`) || got[1].Attempt != 1 {
		t.Fatalf("after overwrite: %d calls %+v, want a second one for ETag %s", len(got), got, second)
	}

	// Receipts are per function: another function sees the blob afresh.
	var other recorder
	scan(t, w, "Archive", p, &other)
	if len(other.all()) != 1 {
		t.Fatalf("function Archive: %d calls, want 1", len(other.all()))
	}
}

func TestScan_OnlyMatchingBlobsFire(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.watcher(Options{})
	for _, name := range []string{"x.txt", "x.csv", "x.csv.bak", "sub/y.csv", "Z.CSV"} {
		e.put(t, name, "data", nil)
	}
	var r recorder
	st := scan(t, w, "Csv", e.pattern(t, "{name}.csv"), &r)
	if got, want := r.names(), []string{"sub/y.csv", "x.csv"}; !slices.Equal(got, want) {
		t.Fatalf("fired for %q, want %q", got, want)
	}
	if st.Matched != 2 || st.Fired != 2 {
		t.Fatalf("stats %+v", st)
	}
	// A literal prefix lists only under it, and matches only there.
	var pre recorder
	scan(t, w, "Sub", e.pattern(t, "sub/{name}"), &pre)
	if got := pre.names(); !slices.Equal(got, []string{"sub/y.csv"}) {
		t.Fatalf("prefix pattern fired for %q", got)
	}
}

func TestScan_BindsTokensAndProperties(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.watcher(Options{})
	etag := e.put(t, "acme/report 1.pdf", "%PDF-1.7", &azblob.UploadBufferOptions{
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: ptr("application/pdf")},
		Metadata:    map[string]*string{"Source": ptr("erp")},
	})
	var r recorder
	scan(t, w, "Ingest", e.pattern(t, "{tenant}/{name}"), &r)
	calls := r.all()
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	b := calls[0]
	if b.Tokens["tenant"] != "acme" || b.Tokens["name"] != "report 1.pdf" || len(b.Tokens) != 2 {
		t.Errorf("Tokens = %v", b.Tokens)
	}
	if b.Container != e.container || b.Name != "acme/report 1.pdf" || b.ETag != strings.Trim(etag, `"`) || b.Attempt != 1 {
		t.Errorf("blob = %+v, want ETag %s", b, etag)
	}
	if want := e.az.BlobURL + "/" + e.container + "/acme/report%201.pdf"; b.URL != want {
		t.Errorf("URL = %q, want %q", b.URL, want)
	}
	pr := b.Properties
	if pr.BlobType != "BlockBlob" || pr.ContentLength != 8 || pr.ContentType != "application/pdf" ||
		len(pr.ContentMD5) != 16 || pr.LastModified.IsZero() || pr.CreatedOn.IsZero() || pr.LastModified.Location() != time.UTC {
		t.Errorf("Properties = %+v", pr)
	}
	if b.Metadata["source"] != "erp" || len(b.Metadata) != 1 {
		t.Errorf("Metadata = %v, want source=erp", b.Metadata)
	}
	// The bare ETag works as If-Match, and the URL reaches the blob.
	etagMatch := azcore.ETag(b.ETag)
	res, err := e.blobs.DownloadStream(context.Background(), e.container, b.Name, &azblob.DownloadStreamOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etagMatch}}})
	if err != nil {
		t.Fatalf("download with If-Match %s: %v", b.ETag, err)
	}
	_ = res.Body.Close()
	cred, err := azblob.NewSharedKeyCredential(azurite.Account, azurite.Key)
	if err != nil {
		t.Fatal(err)
	}
	byURL, err := blob.NewClientWithSharedKeyCredential(b.URL, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if props, err := byURL.GetProperties(context.Background(), nil); err != nil || strings.Trim(string(*props.ETag), `"`) != b.ETag {
		t.Errorf("blob at URL %q: %v", b.URL, err)
	}
}

func TestScan_HostileNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.watcher(Options{})
	names := []string{
		"données/漢字 é.txt",
		"with  two spaces .txt",
		"a/../b.txt",
		"./dot",
		"../up",
		"trailing.",
		"q?#%&+=;@.txt",
		"emoji 🚀/x",
		"tab\tname",
		strings.Repeat("long/", 150) + "end", // 753 characters, 151 segments
		strings.Repeat("ü", 500),             // 1000 bytes of UTF-8
	}
	for _, n := range names {
		e.put(t, n, "x", nil)
	}
	var r recorder
	scan(t, w, "Ingest", e.pattern(t, "{name}"), &r)
	scan(t, w, "Ingest", e.pattern(t, "{name}"), &r)
	got := r.names()
	slices.Sort(got)
	want := slices.Clone(names)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("fired for %q\nwant each once: %q", got, want)
	}
	cred, err := azblob.NewSharedKeyCredential(azurite.Account, azurite.Key)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range r.all() {
		if b.Tokens["name"] != b.Name {
			t.Errorf("name token %q for blob %q", b.Tokens["name"], b.Name)
		}
		byURL, err := blob.NewClientWithSharedKeyCredential(b.URL, cred, nil)
		if err != nil {
			t.Fatal(err)
		}
		if props, err := byURL.GetProperties(context.Background(), nil); err != nil || strings.Trim(string(*props.ETag), `"`) != b.ETag {
			t.Errorf("blob %q: its URL %q does not reach it: %v", b.Name, b.URL, err)
		}
	}
}

func TestScan_MissingContainerIsNothingToDo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	missing := azurite.Name(t)
	p, err := ParsePath(missing + "/{name}")
	if err != nil {
		t.Fatal(err)
	}
	var r recorder
	if st := scan(t, e.watcher(Options{}), "Ingest", p, &r); st != (Stats{}) {
		t.Fatalf("stats %+v, want none", st)
	}
	_, err = e.blobs.ServiceClient().NewContainerClient(missing).GetProperties(context.Background(), nil)
	if !bloberror.HasCode(err, bloberror.ContainerNotFound) {
		t.Fatalf("container properties: %v, want ContainerNotFound (Scan must not create it)", err)
	}
}

func TestScan_ReadsEveryPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.watcher(Options{})
	w.pageSize = 2
	for _, n := range []string{"1", "2", "3", "4", "5"} {
		e.put(t, n, n, nil)
	}
	var r recorder
	if st := scan(t, w, "Ingest", e.pattern(t, "{name}"), &r); st.Fired != 5 {
		t.Fatalf("stats %+v, want 5 fired over 3 pages", st)
	}
}

func TestScan_ConcurrentScansFireOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.watcher(Options{})
	e.put(t, "a", "a", nil)
	var r recorder
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { scan(t, w, "Ingest", e.pattern(t, "{name}"), &r) })
	}
	wg.Wait()
	if n := len(r.all()); n != 1 {
		t.Fatalf("%d calls from 4 concurrent scans, want 1", n)
	}
}

func TestScan_RefusesBadArguments(t *testing.T) {
	t.Parallel()
	w := New(nil, nil, Options{})
	hosts, err := ParsePath("azure-webjobs-hosts/{name}")
	if err != nil {
		t.Fatal(err)
	}
	inbox, _ := ParsePath("inbox/{name}")
	for _, c := range []struct {
		function string
		p        Pattern
		want     string
	}{
		{"Ingest", hosts, "receipts"},
		{"Ingest", Pattern{}, "empty pattern"},
		{"", inbox, "no function"},
	} {
		if _, err := w.Scan(context.Background(), c.function, c.p, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Scan(%q, %q) error %v, want %q", c.function, c.p, err, c.want)
		}
		if err := w.Watch(context.Background(), c.function, c.p, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Watch(%q, %q) error %v, want %q", c.function, c.p, err, c.want)
		}
	}
}

func TestWatch_PollsUntilCancelled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.watcher(Options{PollInterval: 20 * time.Millisecond})
	fired := make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- w.Watch(ctx, "Ingest", e.pattern(t, "{name}"), func(_ context.Context, b Blob) error {
			fired <- b.Name
			return nil
		})
	}()
	for _, name := range []string{"first", "second"} {
		e.put(t, name, name, nil)
		select {
		case got := <-fired:
			if got != name {
				t.Fatalf("fired for %q, want %q", got, name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Watch did not fire for %q", name)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Watch returned %v, want nil on cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not return after cancel")
	}
	if len(fired) != 0 {
		t.Fatalf("extra firings: %d", len(fired))
	}
}
