package extract

import "io"

// textProducer passes plain text through the sink.
type textProducer struct {
	src *source
	buf []byte
}

func newTextProducer(src *source) *textProducer {
	return &textProducer{src: src, buf: make([]byte, readBufferBytes)}
}

func (t *textProducer) next(out *sink) error {
	n, err := io.ReadFull(t.src, t.buf)
	out.write(t.buf[:n])
	if err == io.ErrUnexpectedEOF {
		return io.EOF
	}
	return err
}
