package batch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"iter"

	"github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/offpath/offpath/internal/lines"
	"github.com/offpath/offpath/internal/object"
)

// maxInputLine bounds one line of a tenant's JSONL input.
const maxInputLine = 2*MaxPromptBytes + 64<<10

// itemOptions decode an input line exactly as encoding/json's Decoder with
// DisallowUnknownFields did: the general way of itemLine, for the lines it
// does not read by hand.
var itemOptions = json.JoinOptions(jsonv1.DefaultOptionsV1(), json.RejectUnknownMembers(true))

// blobItems streams the items of a tenant's JSONL in the uploads container:
// one Item object per line, unknown fields refused, blank lines skipped. It
// gives the blob's size to sized before the first item.
func (s *Service) blobItems(ctx context.Context, name string, sized func(int64)) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		// One request: the size is checked from the download's headers,
		// before a byte of the body is read.
		body, info, err := s.o.Blobs.Open(ctx, s.o.Containers.Uploads, name)
		if err != nil {
			if errors.Is(err, object.ErrNotFound) {
				err = invalid("input_blob_not_found", "input_blob %q does not exist", clip(name))
			}
			yield(Item{}, err)
			return
		}
		defer body.Close()
		if info.Size > s.o.MaxInputBytes {
			yield(Item{}, invalid("too_large", "input_blob is %d bytes; at most %d", info.Size, s.o.MaxInputBytes))
			return
		}
		sized(info.Size)
		br := bufio.NewReaderSize(body, 256<<10)
		var line []byte
		var dec itemLine
		for n := 1; ; n++ {
			line, err = lines.Read(br, line, maxInputLine)
			if errors.Is(err, io.EOF) {
				return
			}
			if errors.Is(err, lines.ErrTooLong) {
				yield(Item{}, invalid("invalid_input_line", "input_blob line %d: longer than %d bytes", n, maxInputLine))
				return
			}
			if err != nil {
				yield(Item{}, err)
				return
			}
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var it Item
			if err := dec.decode(line, &it); err != nil {
				yield(Item{}, invalid("invalid_input_line", "input_blob line %d: not an item object (id, prompt or messages, max_tokens)", n))
				return
			}
			if !yield(it, nil) {
				return
			}
		}
	}
}
