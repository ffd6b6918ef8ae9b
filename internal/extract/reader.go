package extract

import (
	"cmp"
	"errors"
	"fmt"
	"io"

	"github.com/offpath/offpath/internal/outcome"
)

// Reasons of the rejections this package returns (outcome.Error.Reason).
const (
	ReasonEmpty       = "empty document"
	ReasonBinary      = "binary content"
	ReasonNotUTF8     = "not UTF-8 text"
	ReasonTooLarge    = "document too large"
	ReasonUnsupported = "unsupported document type"
	ReasonMalformed   = "malformed document"
	ReasonTooDeep     = "document nested too deeply"
)

// Defaults of Options.
const (
	DefaultMaxDepth      = 128
	DefaultMaxTokenBytes = 16 << 20
)

// Options bound what a Reader accepts. Zero fields take the defaults.
type Options struct {
	// MaxInputBytes bounds the document's size; 0 means no bound (the
	// claim check has bounded it already).
	MaxInputBytes int64
	// MaxDepth bounds the nesting of JSON values. Default 128.
	MaxDepth int
	// MaxTokenBytes bounds one HTML token (a text node, a tag) and one JSON
	// string, which the tokenizers hold whole. Default 16 MiB.
	MaxTokenBytes int
}

// producer turns the source into text, a piece at a time, written to the
// sink; it returns io.EOF when the document is done.
type producer interface {
	next(out *sink) error
}

// Reader reads the text of a document. Its Read returns UTF-8 text, and an
// outcome.Reject error (see the Reason constants) if the document cannot
// yield any; other errors are the source's, wrapped, and transient.
type Reader struct {
	src  *source
	prod producer
	out  sink
	off  int // read position in out.buf
	err  error
}

// New returns a Reader of the text of the document r of the given kind.
// Nothing is read until the first Read.
func New(kind Kind, r io.Reader, opts Options) (*Reader, error) {
	opts.MaxDepth = cmp.Or(opts.MaxDepth, DefaultMaxDepth)
	opts.MaxTokenBytes = cmp.Or(opts.MaxTokenBytes, DefaultMaxTokenBytes)
	src := newSource(r, opts.MaxInputBytes)
	x := &Reader{src: src}
	switch kind {
	case Text:
		x.prod = newTextProducer(src)
	case Markdown:
		x.prod = newMarkdownProducer(src)
	case HTML:
		x.prod = newHTMLProducer(src, opts.MaxTokenBytes)
	case JSON:
		x.prod = newJSONProducer(src, opts.MaxDepth, opts.MaxTokenBytes)
	case CSV:
		x.prod = newCSVProducer(src, ',')
	case TSV:
		x.prod = newCSVProducer(src, '\t')
	default:
		return nil, outcome.Reject(ReasonUnsupported, fmt.Errorf("kind %v", kind))
	}
	return x, nil
}

// Read reads text into p.
func (x *Reader) Read(p []byte) (int, error) {
	for x.off == len(x.out.buf) {
		if x.err != nil {
			return 0, x.err
		}
		x.out.buf, x.off = x.out.buf[:0], 0
		if err := x.prod.next(&x.out); err != nil {
			x.err = x.finish(err)
		}
	}
	n := copy(p, x.out.buf[x.off:])
	x.off += n
	return n, nil
}

// finish turns the producer's final error into the Reader's: the source's
// own errors (rejections, read errors) win over what a parser made of them,
// and a document without text is rejected.
func (x *Reader) finish(err error) error {
	if x.src.err != nil && !errors.Is(x.src.err, io.EOF) {
		return x.src.err
	}
	if !errors.Is(err, io.EOF) {
		return err
	}
	if x.out.text == 0 {
		if x.src.n == 0 {
			return outcome.Reject(ReasonEmpty, errors.New("no bytes"))
		}
		return outcome.Reject(ReasonEmpty, fmt.Errorf("no text in %d bytes", x.src.n))
	}
	return io.EOF
}

// InputBytes is how many bytes of the document have been read.
func (x *Reader) InputBytes() int64 { return x.src.n }
