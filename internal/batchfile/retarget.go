package batchfile

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// Retarget streams an input file written by [Writer] for deployment from
// as the same file for deployment to: each line's body.model is rewritten,
// nothing else. A line without body.model naming from is an error (the
// file is not what the caller thinks). The result is len(to)−len(from)
// bytes longer per line.
func Retarget(r io.Reader, from, to string) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(retarget(pw, r, from, to))
	}()
	return pr
}

func retarget(w io.Writer, r io.Reader, from, to string) error {
	old := []byte(`,"body":{"model":"` + from + `"`)
	repl := []byte(`,"body":{"model":"` + to + `"`)
	br := bufio.NewReaderSize(r, 1<<20)
	bw := bufio.NewWriterSize(w, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		for err == bufio.ErrBufferFull { // a line longer than the buffer
			more, e := br.ReadSlice('\n')
			line, err = append(bytes.Clone(line), more...), e
		}
		if len(line) > 0 {
			i := bytes.Index(line, old)
			if i < 0 {
				return fmt.Errorf("retarget input line %d: body.model is not %q", n, from)
			}
			if _, werr := bw.Write(line[:i]); werr != nil {
				return werr
			}
			if _, werr := bw.Write(repl); werr != nil {
				return werr
			}
			if _, werr := bw.Write(line[i+len(old):]); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return bw.Flush()
		}
		if err != nil {
			return fmt.Errorf("retarget input: %w", err)
		}
	}
}
