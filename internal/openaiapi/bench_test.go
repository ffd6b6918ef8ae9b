package openaiapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/auth"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/tenant"
	"github.com/offpath/offpath/internal/testing/rss"
)

// benchBytes is the size of the benchmark's upload.
const benchBytes = 150 << 20

// writeInput writes about size bytes of batch input lines (1.5 KB each).
func writeInput(w io.Writer, size int64) (lines int, err error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	filler := strings.Repeat("The VPN drops every hour and the printer is on fire again. ", 22)
	var n int64
	for ; n < size; lines++ {
		l := `{"custom_id":"req-` + strconv.Itoa(lines) + `","method":"POST","url":"/v1/chat/completions","body":{"model":"summarize","max_tokens":64,` +
			`"messages":[{"role":"system","content":"Summarise."},{"role":"user","content":"` + filler + `"}]}}` + "\n"
		k, err := bw.WriteString(l)
		if err != nil {
			return lines, err
		}
		n += int64(k)
	}
	return lines, bw.Flush()
}

type benchAuth struct{}

func (benchAuth) Authenticate(context.Context, *http.Request) (auth.Principal, error) {
	return auth.Principal{TenantID: "contoso", Method: auth.APIKey}, nil
}

type benchTenants struct{}

func (benchTenants) Get(context.Context, string) (tenant.Tenant, error) {
	t := tenant.New("contoso", "Contoso", time.Now())
	t.Aliases = []string{"summarize"}
	return t, nil
}

// BenchmarkUpload150MB streams a 150 MB batch input through the door over
// HTTP into Azurite (validate every line, store the bytes and the items),
// and, as the baseline, writes the same bytes straight to two blobs. Each
// reports its time and the peak RSS of the process (server, client and
// generator together; the client streams, it never holds the file).
func BenchmarkUpload150MB(b *testing.B) {
	az := azurite.Start(b)
	client, err := azblob.NewClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		b.Fatal(err)
	}
	models, err := os.ReadFile("../../models.json")
	if err != nil {
		b.Fatal(err)
	}
	cat, err := catalog.Parse(models)
	if err != nil {
		b.Fatal(err)
	}
	store := blobstore.New(client, blobstore.Options{BlockSize: 1 << 20})
	var batches Batches = (*batch.Service)(nil) // uploads never reach the control plane
	door := New(Options{Auth: benchAuth{}, Tenants: benchTenants{}, Batches: batches, Blobs: store, Catalog: cat})
	srv := httptest.NewServer(door)
	defer srv.Close()

	b.Run("door", func(b *testing.B) {
		var peak int64
		for range b.N {
			rss.Reset(b, rss.Self)
			pr, pw := io.Pipe()
			mw := multipart.NewWriter(pw)
			go func() {
				err := mw.WriteField("purpose", "batch")
				if err == nil {
					var part io.Writer
					if part, err = mw.CreateFormFile("file", "big.jsonl"); err == nil {
						_, err = writeInput(part, benchBytes)
					}
				}
				if err == nil {
					err = mw.Close()
				}
				pw.CloseWithError(err)
			}()
			res, err := http.Post(srv.URL+"/api/openai/v1/files", mw.FormDataContentType(), pr)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Fatalf("upload: %d %s", res.StatusCode, body)
			}
			peak = max(peak, rss.Peak(b, rss.Self))
		}
		b.SetBytes(benchBytes)
		b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
	})
	// The baseline writes the bytes to two blobs at once, as the door
	// stores the file and its items, without HTTP, parsing or checks.
	b.Run("baseline-plain-blob-writes", func(b *testing.B) {
		var peak int64
		for i := range b.N {
			rss.Reset(b, rss.Self)
			var ws [2]object.Writer
			for k := range ws {
				if ws[k], err = store.Create(context.Background(), "baseline", fmt.Sprintf("plain-%d-%d.jsonl", i, k), nil); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := writeInput(io.MultiWriter(ws[0], ws[1]), benchBytes); err != nil {
				b.Fatal(err)
			}
			for _, w := range ws {
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			peak = max(peak, rss.Peak(b, rss.Self))
		}
		b.SetBytes(benchBytes)
		b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
	})
}
