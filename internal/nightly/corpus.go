package nightly

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/tickets"
)

// indexEntry is one line of a run's index: what the report shows of a
// ticket besides its summary. No body.
type indexEntry struct {
	ID       string `json:"id"`
	Subject  string `json:"subject,omitempty"`
	Customer string `json:"customer,omitempty"`
	Hash     string `json:"hash"`
	Blob     string `json:"blob"`
	Line     int    `json:"line,omitempty"`
}

// manifest is a run's collection summary, with the skipped documents.
type manifest struct {
	Day       string         `json:"day"`
	Run       string         `json:"run"`
	Collected Collected      `json:"collected"`
	Skipped   []tickets.Skip `json:"skipped"`
}

// jsonlWriter is a buffered JSONL blob being written.
type jsonlWriter struct {
	w   object.Writer
	bw  *bufio.Writer
	enc *json.Encoder
}

func (s *Service) createJSONL(ctx context.Context, name string) (*jsonlWriter, error) {
	w, err := s.o.Blobs.Create(ctx, s.o.Uploads, name, nil)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &jsonlWriter{w: w, bw: bw, enc: enc}, nil
}

func (j *jsonlWriter) close() error {
	if err := j.bw.Flush(); err != nil {
		j.w.Abort(err)
		return err
	}
	return j.w.Close()
}

// collect streams the day's new tickets into the run's corpus and index and
// writes its manifest. The corpus is what the job is made from: one item per
// ticket, its prompt the subject, the customer and the body.
func (s *Service) collect(ctx context.Context, day time.Time, run string) (Collected, error) {
	prefix := RunPrefix(s.o.Tenant, dayName(day), run)
	corpus, err := s.createJSONL(ctx, prefix+corpusFile)
	if err != nil {
		return Collected{}, err
	}
	index, err := s.createJSONL(ctx, prefix+indexFile)
	if err != nil {
		corpus.w.Abort(err)
		return Collected{}, err
	}
	var prompt strings.Builder
	sv := &sieve{
		lookup: func(ctx context.Context, ids []string) (map[string]string, error) {
			return s.o.Summaries.Lookup(ctx, s.o.Tenant, ids)
		},
		emit: func(t tickets.Ticket) error {
			prompt.Reset()
			if t.Subject != "" {
				prompt.WriteString("Subject: " + t.Subject + "\n")
			}
			if t.Customer != "" {
				prompt.WriteString("Customer: " + t.Customer + "\n")
			}
			if prompt.Len() > 0 {
				prompt.WriteString("\n")
			}
			prompt.WriteString(t.Body)
			if err := corpus.enc.Encode(batch.Item{ID: t.ID, Prompt: prompt.String()}); err != nil {
				return err
			}
			return index.enc.Encode(indexEntry{ID: t.ID, Subject: t.Subject, Customer: t.Customer, Hash: t.Hash, Blob: t.Blob, Line: t.Line})
		},
	}
	res, err := tickets.NewCollector(s.o.Tickets, nil, s.o.Collector).Collect(ctx, day, func(t tickets.Ticket) error {
		return sv.add(ctx, t)
	})
	if err == nil {
		err = sv.flush(ctx)
	}
	if err == nil {
		err = errors.Join(corpus.close(), index.close())
	}
	if err != nil {
		corpus.w.Abort(err)
		index.w.Abort(err)
		return Collected{}, err
	}
	c := collected(res, sv)
	m, err := s.createJSONL(ctx, prefix+manifestFile)
	if err != nil {
		return c, err
	}
	if err := m.enc.Encode(manifest{Day: dayName(day), Run: run, Collected: c, Skipped: res.Skipped}); err != nil {
		m.w.Abort(err)
		return c, fmt.Errorf("write manifest: %w", err)
	}
	return c, m.close()
}

func (s *Service) readManifest(ctx context.Context, n Night) (manifest, error) {
	body, _, err := s.o.Blobs.Open(ctx, s.o.Uploads, RunPrefix(n.Tenant, n.Day, n.Run)+manifestFile)
	if err != nil {
		return manifest{}, fmt.Errorf("open manifest: %w", err)
	}
	defer body.Close()
	var m manifest
	if err := json.NewDecoder(body).Decode(&m); err != nil {
		return manifest{}, fmt.Errorf("read manifest: %w", err)
	}
	return m, nil
}

// eachIndexed calls fn with each entry of a run's index, in order.
func (s *Service) eachIndexed(ctx context.Context, n Night, fn func(indexEntry) error) error {
	body, _, err := s.o.Blobs.Open(ctx, s.o.Uploads, RunPrefix(n.Tenant, n.Day, n.Run)+indexFile)
	if err != nil {
		return fmt.Errorf("open index: %w", err)
	}
	defer body.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(body, 256<<10))
	for {
		var e indexEntry
		if err := dec.Decode(&e); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read index: %w", err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

// recordHashes writes the hashes of the run's tickets to the summaries
// record, a thousand at a time.
func (s *Service) recordHashes(ctx context.Context, n Night) error {
	const chunk = 1000
	buf := make([]Submitted, 0, chunk)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		err := s.o.Summaries.Record(ctx, n.Tenant, n.JobID, buf)
		buf = buf[:0]
		return err
	}
	err := s.eachIndexed(ctx, n, func(e indexEntry) error {
		buf = append(buf, Submitted{ID: e.ID, Hash: e.Hash})
		if len(buf) == chunk {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("record the hashes of day %s: %w", n.Day, err)
	}
	return nil
}
