// Package chunk splits the text of a document into overlapping chunks sized
// for an embedding model, streaming: a Splitter reads text from an
// io.Reader and holds about one chunk of it at a time, so a document of any
// size is chunked in constant memory, including one that is a single
// 10 MB line.
//
// Sizes are in tokens by package tokens' approximation, ceil(bytes/4),
// the rule the simulator and offpath's rate limiter use, so a chunk of Size
// tokens is at most 4 × Size bytes. A chunk is cut at the last paragraph
// break in the second half of that span, else the last sentence end, else
// the last line break, else the last space, else the last rune boundary: a
// cut never splits a UTF-8 sequence. The next chunk starts up to Overlap
// tokens before the cut, at the earliest sentence or word start in that
// span, so the overlap never exceeds Overlap tokens.
//
// Chunks cover the text exactly: each one's Offset is the byte offset of
// its first byte in the text, and Text[Overlap:] of every chunk,
// concatenated, is the text.
package chunk

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/offpath/offpath/internal/tokens"
)

// Defaults of Options.
const (
	DefaultSize    = 512
	DefaultOverlap = 64
)

// readBytes is the most read from the source at once.
const readBytes = 64 << 10

// Options size the chunks. Zero fields take the defaults.
type Options struct {
	// Size is the most tokens in a chunk, at least 8. Default 512.
	Size int
	// Overlap is the most tokens a chunk repeats from the end of the one
	// before; less than Size/2. Default 64; negative means none.
	Overlap int
}

// Chunk is a piece of the text.
type Chunk struct {
	// Index counts chunks from 0.
	Index int
	// Offset is the byte offset of Text in the whole text.
	Offset int64
	// Text is the chunk, at most 4 × Size bytes.
	Text string
	// Tokens is the approximate token count of Text, at most Size.
	Tokens int
	// Overlap is how many bytes at the start of Text end the previous chunk.
	Overlap int
}

// Splitter cuts text read from a reader into chunks.
type Splitter struct {
	r       io.Reader
	maxB    int    // most bytes in a chunk
	overB   int    // most bytes of overlap
	buf     []byte // text from base on
	base    int64  // offset of buf[0] in the text
	done    int64  // offset up to which text has been emitted
	index   int
	eof     bool
	err     error // sticky: a read error, or io.EOF after the last chunk
	pending error // a read error met while filling
}

// New returns a Splitter that reads text from r.
func New(r io.Reader, opts Options) (*Splitter, error) {
	size := cmp.Or(opts.Size, DefaultSize)
	overlap := cmp.Or(opts.Overlap, DefaultOverlap)
	overlap = max(overlap, 0)
	if size < 8 {
		return nil, fmt.Errorf("chunk size %d: want at least 8 tokens", size)
	}
	if overlap*2 >= size {
		return nil, fmt.Errorf("chunk overlap %d: want less than half the size %d", overlap, size)
	}
	maxB := tokens.MaxBytes(size)
	return &Splitter{
		r:     r,
		maxB:  maxB,
		overB: tokens.MaxBytes(overlap),
		buf:   make([]byte, 0, maxB+readBytes),
	}, nil
}

// Next returns the next chunk, or io.EOF after the last. A read error of the
// source (an extraction rejection, a storage failure) is returned as soon as
// it is met, and from then on: the text after the last chunk returned is
// incomplete and is not chunked.
func (s *Splitter) Next() (Chunk, error) {
	if s.err != nil {
		return Chunk{}, s.err
	}
	s.fill()
	if s.pending != nil { // the text is incomplete: no chunk from a partial tail
		s.err = s.pending
		return Chunk{}, s.err
	}
	end := s.base + int64(len(s.buf))
	if end <= s.done { // nothing new: the rest was the last chunk's overlap
		s.err = io.EOF
		return Chunk{}, s.err
	}
	cut := len(s.buf)
	if !s.eof || len(s.buf) > s.maxB {
		cut = cutPoint(s.buf, s.maxB, s.maxB/2)
	}
	overlap := int(s.done - s.base)
	c := Chunk{
		Index:   s.index,
		Offset:  s.base,
		Text:    string(s.buf[:cut]),
		Tokens:  tokens.Bytes(cut),
		Overlap: overlap,
	}
	s.index++
	s.done = s.base + int64(cut)
	next := cut
	if s.overB > 0 && cut < len(s.buf) {
		next = overlapStart(s.buf, cut, s.overB)
	}
	n := copy(s.buf, s.buf[next:])
	s.buf = s.buf[:n]
	s.base += int64(next)
	return c, nil
}

// fill reads until the buffer holds more than a chunk, or the text ends.
func (s *Splitter) fill() {
	for empty := 0; !s.eof && len(s.buf) <= s.maxB; {
		n, err := s.r.Read(s.buf[len(s.buf):min(cap(s.buf), len(s.buf)+readBytes)])
		s.buf = s.buf[:len(s.buf)+n]
		if n == 0 && err == nil {
			if empty++; empty == 100 {
				err = io.ErrNoProgress
			}
		}
		if err != nil {
			s.eof = true
			if !errors.Is(err, io.EOF) {
				s.pending = err
			}
		}
	}
}

// All returns the chunks as an iterator. It stops after the first error,
// which it yields; io.EOF is not yielded.
func (s *Splitter) All() iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		for {
			c, err := s.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
}
