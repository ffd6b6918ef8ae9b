package tickets

import (
	"context"
	"errors"
	"io"
)

// readAhead downloads a large blob ahead of its reader, in its own goroutine,
// by up to depth chunks, so that the download of the next files overlaps the
// parsing of the current one without holding any file whole.
type readAhead struct {
	chunks chan []byte // filled chunks, closed at the end
	free   chan []byte // chunks read, for reuse
	stop   chan struct{}
	done   chan struct{} // closed when the goroutine has returned
	err    error         // the download's error, set before chunks is closed

	cur []byte // the chunk being read
	off int    // how much of cur has been read
}

const (
	readAheadChunk = 256 << 10
	readAheadDepth = 4
)

func newReadAhead() *readAhead {
	return &readAhead{
		chunks: make(chan []byte, readAheadDepth),
		free:   make(chan []byte, readAheadDepth+1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
}

// fill reads body into the chunks until the end, an error, Close or ctx's
// end, and closes body. The caller runs it in its own goroutine.
func (ra *readAhead) fill(ctx context.Context, body io.ReadCloser) {
	defer close(ra.done)
	defer close(ra.chunks)
	defer body.Close()
	for {
		var buf []byte
		select {
		case buf = <-ra.free:
		default:
			buf = make([]byte, readAheadChunk)
		}
		n, err := io.ReadFull(body, buf[:cap(buf)])
		if n > 0 {
			select {
			case ra.chunks <- buf[:n]:
			case <-ra.stop:
				return
			case <-ctx.Done():
				ra.err = ctx.Err()
				return
			}
		}
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return
		case err != nil:
			ra.err = err
			return
		}
	}
}

// Read implements io.Reader.
func (ra *readAhead) Read(p []byte) (int, error) {
	if ra.off == len(ra.cur) {
		if ra.cur != nil {
			select {
			case ra.free <- ra.cur:
			default:
			}
		}
		c, ok := <-ra.chunks
		if !ok {
			ra.cur, ra.off = nil, 0
			if ra.err != nil {
				return 0, ra.err
			}
			return 0, io.EOF
		}
		ra.cur, ra.off = c, 0
	}
	n := copy(p, ra.cur[ra.off:])
	ra.off += n
	return n, nil
}

// Close stops the download if it is still running and waits until it has.
// It must be called exactly once.
func (ra *readAhead) Close() error {
	close(ra.stop)
	<-ra.done
	return nil
}
