package batchfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/offpath/offpath/internal/lines"
)

// IndexReader looks up the entries of one part's index while reading the
// index file once, in line order, as the part's output is read: the
// header first, which must name the reader's job and part (an index
// written without one starts with its first entry). Azure
// writes output lines roughly in input order, so the entry a line needs is
// just ahead of the reader or among the last [IndexWindow] entries read.
// An entry further behind is read again from the file, from the nearest of
// the offsets kept every [indexMarkEvery] lines. Memory is the window,
// whatever the number of lines (plus one offset per 64 lines).
type IndexReader struct {
	job   string
	part  int
	open  IndexOpener
	rc    io.ReadCloser
	br    *bufio.Reader
	buf   []byte
	next  int     // line of the next entry in the file
	off   int64   // its byte offset
	marks []int64 // offset of the entry of line k × indexMarkEvery
	win   [IndexWindow]IndexEntry
	began bool // the first line was read: the header, or an entry read again
	eof   bool
	// Rereads counts the entries read again from behind the window.
	Rereads int
}

// IndexWindow is how many of the entries read last an IndexReader keeps.
const IndexWindow = 4096

const indexMarkEvery = 64

// IndexOpener opens a part's index file from a byte offset.
type IndexOpener func(offset int64) (io.ReadCloser, error)

// NewIndexReader reads the index of part of job through open. Nothing is
// opened before the first lookup.
func NewIndexReader(job string, part int, open IndexOpener) *IndexReader {
	return &IndexReader{job: job, part: part, open: open}
}

// Close releases the index file.
func (x *IndexReader) Close() error {
	if x.rc == nil {
		return nil
	}
	err := x.rc.Close()
	x.rc, x.br = nil, nil
	return err
}

// Resolve returns the line and entry of a custom_id found in an output or
// error file: ErrNotIndexed when no entry of this job and part is at its
// position, ErrCheckMismatch when the entry there is another item's; other
// errors mean the index could not be read.
func (x *IndexReader) Resolve(customID string) (int, IndexEntry, error) {
	ref, err := ParseCustomID(customID)
	if err != nil {
		return 0, IndexEntry{}, err
	}
	if ref.Job != x.job || ref.Part != x.part {
		return 0, IndexEntry{}, fmt.Errorf("%s: %w", customID, ErrNotIndexed)
	}
	e, ok, err := x.Lookup(ref.Line)
	if err != nil {
		return 0, IndexEntry{}, err
	}
	if !ok {
		return 0, IndexEntry{}, fmt.Errorf("%s: %w", customID, ErrNotIndexed)
	}
	if e.CustomID != customID {
		return 0, IndexEntry{}, fmt.Errorf("%s: %w", customID, ErrCheckMismatch)
	}
	return ref.Line, e, nil
}

// Lookup returns the entry of a line; ok is false when the index has no
// such line.
func (x *IndexReader) Lookup(line int) (e IndexEntry, ok bool, err error) {
	if line < 0 {
		return IndexEntry{}, false, nil
	}
	for line >= x.next {
		if x.eof {
			return IndexEntry{}, false, nil
		}
		if err := x.advance(); err != nil {
			return IndexEntry{}, false, err
		}
	}
	if line >= x.next-IndexWindow {
		return x.win[line%IndexWindow], true, nil
	}
	e, err = x.reread(line)
	return e, err == nil, err
}

// advance reads the next entry into the window.
func (x *IndexReader) advance() error {
	if !x.began {
		x.began = true
		if err := x.header(); err != nil || x.eof {
			return err
		}
	}
	if x.br == nil {
		if err := x.openAt(x.off); err != nil {
			return err
		}
	}
	if x.next%indexMarkEvery == 0 && len(x.marks) == x.next/indexMarkEvery {
		x.marks = append(x.marks, x.off)
	}
	raw, n, err := x.line()
	if err != nil || x.eof {
		return err
	}
	e, err := x.check(raw, x.next)
	if err != nil {
		return err
	}
	x.win[x.next%IndexWindow] = e
	x.next++
	x.off += n
	return nil
}

// header reads the index's first line: the header, checked against the
// reader's job and part, after which the entries begin. An index written
// without a header begins with its first entry, read again from the start.
func (x *IndexReader) header() error {
	if err := x.openAt(0); err != nil {
		return err
	}
	raw, n, err := x.line()
	if err != nil || x.eof {
		return err
	}
	job, part, ok, err := decodeIndexHeader(raw)
	if err != nil {
		return fmt.Errorf("index line 1: %w", err)
	}
	if !ok {
		return x.Close()
	}
	if job != x.job || part != x.part {
		return fmt.Errorf("the index is of part %d of job %s, not part %d of job %s", part, job, x.part, x.job)
	}
	x.off = n
	return nil
}

// line reads the next line of the open index; at the index's end it
// closes it and sets eof.
func (x *IndexReader) line() ([]byte, int64, error) {
	raw, n, err := x.readEntry(x.br)
	if errors.Is(err, io.EOF) {
		x.eof = true
		return nil, 0, x.Close()
	}
	return raw, n, err
}

func (x *IndexReader) openAt(off int64) error {
	rc, err := x.open(off)
	if err != nil {
		return fmt.Errorf("open index: %w", err)
	}
	x.rc, x.br = rc, bufio.NewReaderSize(rc, 64<<10)
	return nil
}

// reread reads a line's entry again from the mark before it.
func (x *IndexReader) reread(line int) (IndexEntry, error) {
	x.Rereads++
	from := line / indexMarkEvery
	rc, err := x.open(x.marks[from])
	if err != nil {
		return IndexEntry{}, fmt.Errorf("reopen index: %w", err)
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 16<<10)
	for l := from * indexMarkEvery; ; l++ {
		raw, _, err := x.readEntry(br)
		if errors.Is(err, io.EOF) {
			return IndexEntry{}, fmt.Errorf("index entry %d: %w", l+1, io.ErrUnexpectedEOF)
		}
		if err != nil {
			return IndexEntry{}, err
		}
		if l == line {
			return x.check(raw, line)
		}
	}
}

// readEntry reads one line of the index and the bytes it took (the index
// is written with "\n" line ends).
func (x *IndexReader) readEntry(br *bufio.Reader) ([]byte, int64, error) {
	var err error
	x.buf, err = lines.Read(br, x.buf, maxIndexLine)
	if errors.Is(err, io.EOF) {
		return nil, 0, io.EOF
	}
	if err != nil {
		return nil, 0, fmt.Errorf("index entry %d: %w", x.next+1, err)
	}
	return x.buf, int64(len(x.buf)) + 1, nil
}

// check decodes the entry of a line of this job's part.
func (x *IndexReader) check(raw []byte, line int) (IndexEntry, error) {
	e, err := decodeEntry(raw, x.job, x.part, line)
	if err != nil {
		return IndexEntry{}, fmt.Errorf("index entry %d: %w", line+1, err)
	}
	return e, nil
}
