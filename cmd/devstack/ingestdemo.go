package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/document"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/tablestore"
)

// demoDocument is the document make run drops into incoming/contoso/.
const (
	demoDocumentName = "contoso/kb/returns-policy.md"
	demoDocument     = `# Returns policy

Customers may return any item within 30 days of purchase with the receipt.
Items bought online can be returned in any store or by post; the label is
free. Refunds go back to the original payment method within five working
days of the item reaching us.

## Exceptions

Opened software, gift cards and made-to-measure furniture cannot be
returned unless they are faulty. Perishable goods are refunded only on the
day of purchase.

## Faulty items

A faulty item can be returned within one year. Staff may offer a repair, a
replacement or a refund; the customer chooses. Keep the item's packaging
where possible, but its absence is no reason to refuse a return.

## Store credit

Without a receipt, stores offer store credit at the lowest price the item
sold for in the last 90 days. Store credit never expires.
`
)

// aoaiLimits is the handler's OFFPATH_AOAI_LIMITS for the simulator's
// deployments: the queue path's rate limiter runs with the simulator's
// quotas, as it would with a real deployment's.
func aoaiLimits() string {
	limits := map[string]map[string]int64{}
	for _, d := range aoaisim.DefaultDeployments() {
		if d.Type == aoaisim.TypeStandard || d.Type == "" {
			limits[d.Name] = map[string]int64{"tpm": d.TPM, "rpm": d.RPM}
		}
	}
	b, _ := json.Marshal(limits)
	return string(b)
}

// showDocument walks a document through the queue path: it drops it into
// incoming/contoso/, waits for its status to be final, and prints the
// result in ingested/ and the usage it was metered.
func showDocument(ctx context.Context, w io.Writer, n int, conn string, timeout time.Duration) error {
	blobs, err := azblob.NewClientFromConnectionString(conn, nil)
	if err != nil {
		return fmt.Errorf("blob client: %w", err)
	}
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: conn})
	if err != nil {
		return err
	}
	docs := tablestore.NewDocuments(svc, "", nil)
	if _, err := blobs.CreateContainer(ctx, "incoming", nil); err != nil && !strings.Contains(err.Error(), "ContainerAlreadyExists") {
		return fmt.Errorf("create incoming: %w", err)
	}
	corr := "make-run-" + time.Now().UTC().Format("20060102T150405")
	up, err := blobs.UploadBuffer(ctx, "incoming", demoDocumentName, []byte(demoDocument), &azblob.UploadBufferOptions{
		Metadata: map[string]*string{"correlation_id": &corr}})
	if err != nil {
		return fmt.Errorf("upload the demo document: %w", err)
	}
	etag := strings.Trim(string(*up.ETag), `"`)
	done := step(w, n, fmt.Sprintf("The queue path: a document dropped into incoming/%s (%d bytes, correlation id %s)", demoDocumentName, len(demoDocument), corr))
	start := time.Now()

	var st document.Status
	deadline := time.Now().Add(timeout)
	seen := ""
	for {
		st, err = docs.Get(ctx, "contoso", demoDocumentName)
		if err == nil && st.SameVersion(etag) {
			if string(st.State) != seen {
				seen = string(st.State)
				fmt.Fprintf(w, "     %-8s after %s\n", st.State, ms(time.Since(start)))
			}
			if st.State.Final() {
				break
			}
		} else if err != nil && !errors.Is(err, document.ErrNotFound) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the demo document is still %q after %v", seen, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if st.State != document.Done {
		return fmt.Errorf("the demo document ended %s: %s", st.State, st.Reason)
	}
	res, err := blobs.DownloadStream(ctx, "ingested", demoDocumentName+".jsonl", nil)
	if err != nil {
		return fmt.Errorf("read the result: %w", err)
	}
	defer res.Body.Close()
	var head struct {
		Summary  string   `json:"summary"`
		Keywords []string `json:"keywords"`
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 4<<20)
	lines, dims := 0, 0
	for sc.Scan() {
		if lines == 0 {
			_ = json.Unmarshal(sc.Bytes(), &head)
		} else if lines == 1 {
			var c struct{ Vector []float64 }
			_ = json.Unmarshal(sc.Bytes(), &c)
			dims = len(c.Vector)
		}
		lines++
	}
	fmt.Fprintf(w, "     summary:  %s\n", oneLine(head.Summary, 110))
	fmt.Fprintf(w, "     keywords: %s\n", strings.Join(head.Keywords, ", "))
	entries, err := tablestore.NewLedger(svc, tablestore.LedgerOptions{}).Month(ctx, "contoso", ledger.MonthOf(time.Now()))
	if err != nil {
		return err
	}
	prefix := "ingest:" + demoDocumentName + "@" + st.ETag + "#"
	for _, e := range entries {
		if strings.HasPrefix(e.Unit, prefix) {
			fmt.Fprintf(w, "     metered:  %-24s %6d prompt + %3d completion tokens, %d calls, $%s\n",
				e.Deployment, e.PromptTokens, e.CompletionTokens, e.Requests, e.Cost.Dollars())
		}
	}
	done("%s: %d chunks of %d dimensions, processed in %s (see: go run ./cmd/offpath documents status %s)", st.Result, st.Chunks, dims, ms(st.Duration()), demoDocumentName)
	return nil
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
