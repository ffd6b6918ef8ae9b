package azopenai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/offpath/offpath/internal/batch"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// UploadFile uploads a batch input file of exactly size bytes from body,
// with purpose "batch" and expires_after = FileExpiry, and returns the new
// file (its status may be "pending"; see AwaitFile).
//
// openai-go's Files.New marshals the whole multipart form into a
// bytes.Buffer, so a 200 MB file would cost 200 MB of memory. Instead the
// form is built around the stream: the small fields and the file part's
// header are rendered up front, the trailer is known, and the body is
// prefix + body + trailer read in sequence, with an exact Content-Length
// (as the official SDKs send). Memory stays at the transport's buffers
// whatever the size.
//
// The upload is not retried: body is read once, and an upload that fails
// after Azure stored the file leaves a file behind (it expires; FindFile by
// filename finds it). Give each job part a unique filename.
func (c *BatchClient) UploadFile(ctx context.Context, filename string, body io.Reader, size int64) (batch.AzureFile, error) {
	if size < 0 {
		return batch.AzureFile{}, errors.New("upload file: size must be known")
	}
	ub, contentType, err := newUploadBody(filename, body, size, int64(c.cfg.FileExpiry.Seconds()))
	if err != nil {
		return batch.AzureFile{}, fmt.Errorf("upload file: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.UploadTimeout)
	defer cancel()
	var fo openai.FileObject
	err = c.oai.Post(ctx, "files", nil, &fo,
		option.WithRequestBody(contentType, ub),
		// Set the body the transport (and azure.WithTokenCredential's azcore
		// pipeline, which copies any body that is not an io.ReadSeekCloser)
		// sees, with its length. This middleware runs outside the SDK's
		// credential middleware, which is added last.
		option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			req.Body, req.ContentLength, req.GetBody = ub, ub.size, nil
			return next(req)
		}))
	if err != nil {
		if ctx.Err() == nil {
			err = classify(err)
		}
		return batch.AzureFile{}, fmt.Errorf("upload file %q (%d bytes): %w", filename, size, err)
	}
	f := fromSDKFile(&fo)
	c.log.Info().Str("file_id", f.ID).Str("filename", filename).Int64("bytes", size).Str("status", f.Status).Msg("file uploaded")
	return f, nil
}

// uploadBody is prefix + src + trailer. It is an io.ReadSeekCloser so that
// azcore's pipeline streams it instead of copying it: seeking to the start
// or the end is allowed before reading (azcore measures the length that
// way), and rewinding after reading only when src can seek.
type uploadBody struct {
	prefix, trailer []byte
	src             io.Reader
	srcStart        int64 // src's offset at the start, when it is a Seeker
	size            int64
	r               io.Reader
	read            int64 // bytes handed out since the last rewind
	pos             int64 // logical position as Seek reports it
}

func newUploadBody(filename string, src io.Reader, size, expirySeconds int64) (*uploadBody, string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range [][2]string{
		{"purpose", "batch"},
		{"expires_after[anchor]", "created_at"}, // openai-go's (and Python's) bracket form
		{"expires_after[seconds]", strconv.FormatInt(expirySeconds, 10)},
	} {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return nil, "", fmt.Errorf("write form field: %w", err)
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="`+safeFilename(filename)+`"`)
	h.Set("Content-Type", "application/jsonl")
	if _, err := mw.CreatePart(h); err != nil {
		return nil, "", fmt.Errorf("write file part header: %w", err)
	}
	n := buf.Len()
	if err := mw.Close(); err != nil {
		return nil, "", fmt.Errorf("close form: %w", err)
	}
	all := buf.Bytes()
	ub := &uploadBody{prefix: all[:n], trailer: all[n:], src: src, srcStart: -1}
	ub.size = int64(len(ub.prefix)) + size + int64(len(ub.trailer))
	if s, ok := src.(io.Seeker); ok {
		if off, err := s.Seek(0, io.SeekCurrent); err == nil {
			ub.srcStart = off
		}
	}
	ub.reset()
	return ub, mw.FormDataContentType(), nil
}

func (b *uploadBody) reset() {
	b.r = io.MultiReader(bytes.NewReader(b.prefix), b.src, bytes.NewReader(b.trailer))
	b.read, b.pos = 0, 0
}

func (b *uploadBody) Read(p []byte) (int, error) {
	if b.pos != b.read {
		return 0, errors.New("upload body: read after seek away from the read position")
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	b.pos = b.read
	return n, err
}

func (b *uploadBody) Seek(offset int64, whence int) (int64, error) {
	var target int64
	switch whence {
	case io.SeekStart:
		target = offset
	case io.SeekCurrent:
		target = b.pos + offset
	case io.SeekEnd:
		target = b.size + offset
	default:
		return 0, errors.New("upload body: bad whence")
	}
	switch {
	case target == b.read || (b.read == 0 && target == b.size):
		b.pos = target // no-op, or measuring the length before reading
	case target == 0 && b.srcStart >= 0:
		if _, err := b.src.(io.Seeker).Seek(b.srcStart, io.SeekStart); err != nil {
			return 0, fmt.Errorf("upload body: rewind: %w", err)
		}
		b.reset()
	default:
		return 0, fmt.Errorf("upload body: cannot seek to %d of a stream at %d", target, b.read)
	}
	return b.pos, nil
}

// Close does not close src: the caller owns it.
func (b *uploadBody) Close() error { return nil }

// safeFilename keeps the multipart filename to plain characters.
func safeFilename(name string) string {
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r) {
			return r
		}
		return '_'
	}, name)
	if name == "" {
		return "input.jsonl"
	}
	return name
}
