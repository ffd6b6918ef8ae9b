package tickets

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/offpath/offpath/internal/object"
)

// MaxSkips is how many skipped entries a Result lists; the rest are counted.
const MaxSkips = 10_000

// Options tune a Collector. Zero values take the defaults.
type Options struct {
	// Concurrency is how many small blobs are downloaded ahead at once.
	// Default 8.
	Concurrency int
	// PrefetchBytes is the size up to which a blob is downloaded ahead
	// whole; a larger one is downloaded ahead through a 1 MiB read-ahead
	// buffer. Default 1 MiB.
	PrefetchBytes int64
}

// Blobs lists and reads the tickets container; package blobstore's
// Container is one. A missing blob or container is object.ErrNotFound.
type Blobs interface {
	// List yields the blobs under prefix in name order.
	List(ctx context.Context, prefix string) iter.Seq2[object.Entry, error]
	// Open streams a blob, resuming after a broken connection.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
}

// Collector reads a day's tickets from a container.
type Collector struct {
	blobs Blobs
	seen  Summarised
	opts  Options
}

// NewCollector returns a Collector over the tickets container that asks seen
// what has been summarised already. With seen nil every valid ticket is
// yielded as new, for a caller that sorts new from unchanged itself, in bulk.
func NewCollector(tickets Blobs, seen Summarised, opts Options) *Collector {
	opts.Concurrency = cmp.Or(max(opts.Concurrency, 0), 8)
	opts.PrefetchBytes = cmp.Or(max(opts.PrefetchBytes, 0), 1<<20)
	return &Collector{blobs: tickets, seen: seen, opts: opts}
}

// DayPrefix returns the blob name prefix of day's folder, "yyyy-mm-dd/", the
// date taken in day's own location.
func DayPrefix(day time.Time) string {
	return day.Format(time.DateOnly) + "/"
}

// Skip is a document or file that was not collected, and why.
type Skip struct {
	Blob string
	// Line is the 1-based line in a .jsonl file, 0 for a whole file.
	Line int
	// ID is the ticket id when the document had a valid one.
	ID     string
	Reason string
}

// Result sums up one collection.
type Result struct {
	Prefix string
	// Files is the number of blobs under the prefix, read or not.
	Files int
	// Tickets counts valid tickets with distinct ids: New + Unchanged.
	Tickets int
	// New counts the tickets yielded: never summarised, or changed since.
	New int
	// Unchanged counts the tickets whose summarised version is current.
	Unchanged int
	// Duplicates counts later occurrences of an id (each also a Skip).
	Duplicates int
	// Skipped lists the first MaxSkips skips in reading order.
	Skipped []Skip
	// SkippedTotal counts all skips, listed or not.
	SkippedTotal int
}

// Collect reads the tickets under day's folder (see the package
// documentation) and calls yield, in order, with each ticket that is new or
// changed. A container that does not exist is an empty day: nothing was
// dropped yet. Malformed content is reported in the Result and never returned as
// an error; an error means storage, the Summarised record or yield failed,
// the Result covers only what was read until then, and the caller should
// discard what it was given and try the night again.
func (c *Collector) Collect(ctx context.Context, day time.Time, yield func(Ticket) error) (Result, error) {
	r := &run{c: c, yield: yield, first: make(map[string]occurrence)}
	r.res.Prefix = DayPrefix(day)
	files, stop := c.files(ctx, r.res.Prefix)
	defer stop()
	for f := range files {
		<-f.ready
		if err := r.file(ctx, f); err != nil {
			return r.res, fmt.Errorf("collect tickets under %q: %w", r.res.Prefix, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return r.res, fmt.Errorf("collect tickets under %q: %w", r.res.Prefix, err)
	}
	return r.res, nil
}

// occurrence is where an id was first seen, and a prefix of its hash.
type occurrence struct {
	blob, line int
	sum        [8]byte
}

// run is the state of one Collect: the sink for every file.
type run struct {
	c     *Collector
	yield func(Ticket) error
	res   Result

	blobs []string // names of the files read, indexed by occurrence.blob
	first map[string]occurrence
}

func (r *run) file(ctx context.Context, f *file) error {
	if f.name == "" { // a listing error
		if errors.Is(f.err, object.ErrNotFound) {
			return nil // no tickets container: nothing was dropped, an empty day
		}
		return f.err
	}
	r.res.Files++
	r.blobs = append(r.blobs, f.name)
	switch {
	case f.format == unsupported:
		r.skip(0, "", "not a ticket file (want .json, .jsonl or .ndjson)")
		return nil
	case !f.fetch:
		r.skip(0, "", fmt.Sprintf("file too large for one ticket (over %s)", size(MaxDocumentBytes)))
		return nil
	case errors.Is(f.err, object.ErrNotFound):
		r.skip(0, "", "deleted before it could be read")
		return nil
	case f.err != nil:
		return f.err
	case f.data != nil:
		return decode(ctx, bytes.NewReader(f.data), f.format, r)
	case f.stream != nil:
		defer f.stream.Close()
		if err := decode(ctx, f.stream, f.format, r); err != nil {
			return fmt.Errorf("blob %q: %w", f.name, err)
		}
		return nil
	}
	// Prefetched, but it grew past PrefetchBytes since it was listed.
	body, err := r.c.blobs.Open(ctx, f.name)
	if errors.Is(err, object.ErrNotFound) {
		r.skip(0, "", "deleted before it could be read")
		return nil
	}
	if err != nil {
		return err
	}
	defer body.Close()
	if err := decode(ctx, body, f.format, r); err != nil {
		return fmt.Errorf("blob %q: %w", f.name, err)
	}
	return nil
}

// skip implements sink.
func (r *run) skip(line int, id, reason string) {
	r.res.SkippedTotal++
	if len(r.res.Skipped) < MaxSkips {
		r.res.Skipped = append(r.res.Skipped, Skip{Blob: r.blobs[len(r.blobs)-1], Line: line, ID: id, Reason: reason})
	}
}

// ticket implements sink: first occurrence wins, then new-or-changed.
func (r *run) ticket(ctx context.Context, t Ticket) error {
	t.Blob = r.blobs[len(r.blobs)-1]
	var sum [8]byte
	_, _ = hex.Decode(sum[:], []byte(t.Hash[:16]))
	if prev, dup := r.first[t.ID]; dup {
		r.res.Duplicates++
		what := "same content"
		if prev.sum != sum {
			what = "different content"
		}
		where := r.blobs[prev.blob]
		if prev.line > 0 {
			where = fmt.Sprintf("%s line %d", where, prev.line)
		}
		r.skip(t.Line, t.ID, fmt.Sprintf("duplicate id (%s); kept the first, in %s", what, where))
		return nil
	}
	r.first[t.ID] = occurrence{blob: len(r.blobs) - 1, line: t.Line, sum: sum}
	r.res.Tickets++
	if r.c.seen != nil {
		hash, ok, err := r.c.seen.Seen(ctx, t.ID)
		if err != nil {
			return fmt.Errorf("look up summary of ticket %q: %w", t.ID, err)
		}
		if ok && hash == t.Hash {
			r.res.Unchanged++
			return nil
		}
	}
	r.res.New++
	if err := r.yield(t); err != nil {
		return fmt.Errorf("yield ticket %q: %w", t.ID, err)
	}
	return nil
}
