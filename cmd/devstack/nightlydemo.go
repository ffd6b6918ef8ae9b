package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/offpath/offpath/internal/nightly"
)

// demoTickets are yesterday's tickets make run drops into tickets/: one the
// simulated content filter refuses, one malformed line that the report
// lists as skipped.
var demoTickets = []string{
	`{"id":"SUP-4101","subject":"Invoice shows the wrong VAT rate","customer":"Contoso Retail","body":"Our March invoice applies 19% VAT instead of 7% on books. Please correct it and send a new invoice.","created_at":"%sT08:12:00Z"}`,
	`{"id":"SUP-4102","subject":"Cannot reset my password","customer":"Fabrikam Legal","body":"The reset mail never arrives. I checked spam. My colleague got hers within a minute.","created_at":"%sT09:40:00Z"}`,
	`{"id":"SUP-4103","subject":"Parcel arrived damaged","customer":"Northwind","body":"Two of the six lamps were broken on arrival. Photos attached. We need replacements before Friday.","created_at":"%sT10:05:00Z"}`,
	`{"id":"SUP-4104","subject":"Angry customer","customer":"Tailspin","body":"SIM_FILTER_PROMPT (the simulator's content filter refuses this ticket).","created_at":"%sT11:30:00Z"}`,
	`{"id":"SUP-4105","subject":"Export to CSV is empty","customer":"Contoso Retail","body":"Exporting the orders report to CSV gives a file with headers only, for any date range.","created_at":"%sT13:55:00Z","channel":"chat"}`,
	`{"subject":"A ticket without an id","body":"The exporter lost this one's id."}`,
}

// showNightly drops yesterday's tickets, fires the nightly-summaries timer,
// then batch-poll until the morning report is written, and saves the report
// under stateDir/reports for a browser.
func showNightly(ctx context.Context, w io.Writer, n int, conn, hostURL, masterKey, stateDir string, timeout time.Duration) error {
	blobs, err := azblob.NewClientFromConnectionString(conn, nil)
	if err != nil {
		return fmt.Errorf("blob client: %w", err)
	}
	day := nightly.DayOf(time.Now()).Format(time.DateOnly)
	if _, err := blobs.CreateContainer(ctx, "tickets", nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return fmt.Errorf("create tickets: %w", err)
	}
	var body strings.Builder
	for _, t := range demoTickets {
		body.WriteString(strings.ReplaceAll(t, "%s", day) + "\n")
	}
	name := day + "/support-export.jsonl"
	if _, err := blobs.UploadBuffer(ctx, "tickets", name, []byte(body.String()), nil); err != nil {
		return fmt.Errorf("upload the demo tickets: %w", err)
	}
	done := step(w, n, fmt.Sprintf("The nightly summaries: tickets/%s dropped (%d lines), nightly-summaries fired for %s, then batch-poll every second", name, len(demoTickets), day))
	fire := func(fn string) error {
		_, err := call(ctx, http.MethodPost, hostURL+"/admin/functions/"+fn, masterKey, "", []byte(`{}`), nil)
		return err
	}
	if err := fire("nightly-summaries"); err != nil {
		return fmt.Errorf("fire nightly-summaries: %w", err)
	}
	htmlName, mdName := nightly.ReportBlobs(day)
	deadline := time.Now().Add(timeout)
	for {
		if _, err := blobs.ServiceClient().NewContainerClient("reports").NewBlobClient(mdName).GetProperties(ctx, nil); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no morning report for %s after %v", day, timeout)
		}
		if err := fire("batch-poll"); err != nil {
			return fmt.Errorf("fire batch-poll: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	dir := filepath.Join(stateDir, "reports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var md string
	for _, n := range []string{htmlName, mdName} {
		b, err := download(ctx, blobs, "reports", n)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, n), b, 0o644)
		}
		if err != nil {
			return fmt.Errorf("save %s: %w", n, err)
		}
		if n == mdName {
			md = string(b)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(md))
	for n := 0; sc.Scan() && n < 14; n++ {
		if line := sc.Text(); strings.HasPrefix(line, "Of ") || strings.HasPrefix(line, "| ") {
			fmt.Fprintf(w, "     %s\n", oneLine(line, 160))
		}
	}
	if md == "" {
		return errors.New("the morning report is empty")
	}
	done("morning report written: reports/%s (and .md); a copy to open in a browser: %s", htmlName, filepath.Join(dir, htmlName))
	return nil
}

func download(ctx context.Context, blobs *azblob.Client, containerName, name string) ([]byte, error) {
	res, err := blobs.DownloadStream(ctx, containerName, name, nil)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	return io.ReadAll(res.Body)
}
