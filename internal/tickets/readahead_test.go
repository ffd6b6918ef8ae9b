package tickets

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// closeCounter is a body that notes that it was closed.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

func TestReadAhead(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("0123456789abcdef"), (readAheadChunk*(readAheadDepth+3))/16+7)
	broken := errors.New("connection reset")
	tests := []struct {
		name    string
		body    io.Reader
		want    []byte
		wantErr error
	}{
		{"empty", strings.NewReader(""), nil, nil},
		{"small", strings.NewReader("hello"), []byte("hello"), nil},
		{"many chunks, one byte at a time from the network", iotest.OneByteReader(bytes.NewReader(big[:readAheadChunk+3])), big[:readAheadChunk+3], nil},
		{"more than the read-ahead holds", bytes.NewReader(big), big, nil},
		{"error after some data", io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(broken)), []byte("partial"), broken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := &closeCounter{Reader: tt.body}
			ra := newReadAhead()
			go ra.fill(t.Context(), body)
			got, err := io.ReadAll(iotest.HalfReader(ra))
			if !errors.Is(err, tt.wantErr) || !bytes.Equal(got, tt.want) {
				t.Errorf("read %d bytes, %v; want %d bytes, %v", len(got), err, len(tt.want), tt.wantErr)
			}
			ra.Close()
			if body.closed != 1 {
				t.Errorf("body closed %d times, want once", body.closed)
			}
		})
	}
}

func TestReadAhead_StopsEarly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cancel bool
	}{
		{"closed by the reader", false},
		{"context cancelled", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			// An endless body: only Close or the context can end the download.
			body := &closeCounter{Reader: iotest.OneByteReader(zeros{})}
			ra := newReadAhead()
			go ra.fill(ctx, body)
			if _, err := io.ReadFull(ra, make([]byte, 1000)); err != nil {
				t.Fatalf("read: %v", err)
			}
			if tt.cancel {
				cancel()
				<-ra.done
				if _, err := io.Copy(io.Discard, ra); !errors.Is(err, context.Canceled) {
					t.Errorf("read after cancel = %v, want %v", err, context.Canceled)
				}
			}
			ra.Close()
			if body.closed != 1 {
				t.Errorf("body closed %d times, want once", body.closed)
			}
		})
	}
}

// zeros reads zeros forever.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
