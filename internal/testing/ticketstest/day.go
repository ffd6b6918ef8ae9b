// Package ticketstest generates a day of tickets in a blob container and
// downloads it the plain way, so that the benchmarks which collect such a
// day measure the same blobs and compare with the same baseline. Only
// tests and benchmarks import it.
package ticketstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/offpath/offpath/internal/tickets"
)

// seededMarker is the blob SeedDay writes last, at the container's root
// (outside any day), once every ticket is up.
const seededMarker = "seeded"

// uploaders is how many one-ticket files SeedDay uploads at a time.
const uploaders = 16

// SeedDay creates c and writes a day of generated tickets under
// tickets.DayPrefix(day): exports JSONL files "export-NN.jsonl" of
// perExport tickets each, written in turn, then singles one-ticket files
// "single/SNNNNN.json", written 16 at a time. Each ticket is about 4 KB of
// plausible text; the exports are the same bytes on every seeding. The
// singles are drawn by 16 writers that each start from the same seed, so
// which file gets which body depends on scheduling.
//
// A container that already holds the blob "seeded" is taken as seeded and
// left as it is, so a process seeds it once however often its benchmark
// runs (-count): seed one day per container.
func SeedDay(ctx context.Context, c *container.Client, day time.Time, exports, perExport, singles int) error {
	_, err := c.NewBlobClient(seededMarker).GetProperties(ctx, nil)
	switch {
	case err == nil:
		return nil
	case !bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound):
		return fmt.Errorf("look for the %q marker: %w", seededMarker, err)
	}
	if _, err := c.Create(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return fmt.Errorf("create container: %w", err)
	}
	prefix := tickets.DayPrefix(day)
	created := day.Format(time.DateOnly) + "T09:30:00Z"

	rng := rand.New(rand.NewPCG(1, 2))
	var buf bytes.Buffer
	for e := range exports {
		buf.Reset()
		for i := range perExport {
			if err := writeTicket(&buf, fmt.Sprintf("E%02d-%04d", e, i), created, rng); err != nil {
				return err
			}
			buf.WriteByte('\n')
		}
		if err := upload(ctx, c, prefix+fmt.Sprintf("export-%02d.jsonl", e), buf.Bytes()); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	names := make(chan int)
	var wg sync.WaitGroup
	for range uploaders {
		wg.Go(func() {
			var buf bytes.Buffer
			rng := rand.New(rand.NewPCG(3, 4))
			for i := range names {
				buf.Reset()
				id := fmt.Sprintf("S%05d", i)
				err := writeTicket(&buf, id, created, rng)
				if err == nil {
					err = upload(ctx, c, prefix+"single/"+id+".json", buf.Bytes())
				}
				if err != nil {
					cancel(err)
					return
				}
			}
		})
	}
feed:
	for i := range singles {
		select {
		case names <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(names)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return upload(ctx, c, seededMarker, nil)
}

// writeTicket writes one ticket of about 4 KB of plausible text as a line
// of JSON, without the newline.
func writeTicket(w *bytes.Buffer, id, created string, rng *rand.Rand) error {
	words := []string{"printer", "invoice", "login", "fails", "since", "Monday", "refund", "the", "a", "customer",
		"café", "\"quoted\"", "error", "500", "again", "please", "urgent", "VPN", "reset", "password"}
	var body strings.Builder
	n := 300 + rng.IntN(600)
	for i := range n {
		if i > 0 && i%40 == 0 {
			body.WriteString(".\n")
		}
		body.WriteString(words[rng.IntN(len(words))])
		body.WriteByte(' ')
	}
	doc := map[string]any{
		"id": id, "subject": "Ticket " + id, "body": body.String(), "customer": "Customer " + strconv.Itoa(rng.IntN(500)),
		"created_at": created, "priority": "normal", "tags": []string{"bench"},
	}
	if err := json.NewEncoder(w).Encode(doc); err != nil {
		return fmt.Errorf("encode ticket %s: %w", id, err)
	}
	w.Truncate(w.Len() - 1) // Encode's newline
	return nil
}

func upload(ctx context.Context, c *container.Client, name string, data []byte) error {
	if _, err := c.NewBlockBlobClient(name).UploadBuffer(ctx, data, nil); err != nil {
		return fmt.Errorf("upload %s: %w", name, err)
	}
	return nil
}
