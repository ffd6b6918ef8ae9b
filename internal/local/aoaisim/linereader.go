package aoaisim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// utf8BOM is the byte-order mark Azure's batch validation trips over.
const utf8BOM = "\xef\xbb\xbf"

// errLineTooLong reports a line above the reader's limit.
var errLineTooLong = errors.New("line too long")

// readLine returns the next line of r without its "\n" (a final line without
// one is returned too), reusing buf. Unlike bufio.Scanner it has no 64 KiB
// token limit: a line may be up to maxLen bytes. At the end it returns io.EOF.
func readLine(r *bufio.Reader, buf []byte, maxLen int) ([]byte, error) {
	buf = buf[:0]
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > maxLen+1 {
			// drain the rest of the line so the caller may continue
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			return buf, errLineTooLong
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(buf) == 0 {
				return buf, io.EOF
			}
			return buf, nil
		default:
			return buf, fmt.Errorf("read line: %w", err)
		}
	}
}
