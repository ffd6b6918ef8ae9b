package openaiapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/object"
	"github.com/offpath/offpath/internal/tenant"
)

// fileRecord describes an uploaded input file. It is written last, once
// the file and its items are stored: a file exists when its record does.
type fileRecord struct {
	ID        string `json:"id"`
	Filename  string `json:"filename"`
	Bytes     int64  `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	ExpiresAt int64  `json:"expires_at,omitempty"`
	Lines     int    `json:"lines"`
	Model     string `json:"model"`
	URL       string `json:"url"`
}

// fileObject is a file in OpenAI's shape.
type fileObject struct {
	ID            string  `json:"id"`
	Object        string  `json:"object"`
	Bytes         int64   `json:"bytes"`
	CreatedAt     int64   `json:"created_at"`
	ExpiresAt     *int64  `json:"expires_at"`
	Filename      string  `json:"filename"`
	Purpose       string  `json:"purpose"`
	Status        string  `json:"status"`
	StatusDetails *string `json:"status_details"`
}

func (f *fileRecord) object() fileObject {
	o := fileObject{ID: f.ID, Object: "file", Bytes: f.Bytes, CreatedAt: f.CreatedAt, Filename: f.Filename, Purpose: "batch", Status: "processed"}
	if f.ExpiresAt > 0 {
		o.ExpiresAt = &f.ExpiresAt
	}
	return o
}

// Uploaded files live in the tenant's area of the uploads container:
// {tenant}/openai/files/{id}/ holds input.jsonl (the bytes uploaded),
// items.jsonl (the control plane's items) and file.json (the record).
func filesPrefix(tenantID string) string { return tenantID + "/openai/files/" }

func fileBlob(tenantID, id, name string) string { return filesPrefix(tenantID) + id + "/" + name }

// Ids: input files are "file-" and a job-style id (newest sorts first);
// a job's output and error files are "file-{job}-output" and
// "file-{job}-errors".
const (
	filePrefix    = "file-"
	outputSuffix  = "-output"
	errorsSuffix  = "-errors"
	batchIDPrefix = "batch_"
)

func validUploadID(id string) bool {
	return strings.HasPrefix(id, filePrefix) && batch.ValidJobID(strings.TrimPrefix(id, filePrefix))
}

// Limits of the expires_after form fields (Azure's: 14 to 30 days).
const (
	minFileExpiry = 1_209_600
	maxFileExpiry = 2_592_000
)

func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request, t tenant.Tenant) {
	ctx := r.Context()
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "multipart/form-data" {
		fail(w, r, &apiError{status: http.StatusUnsupportedMediaType, code: "invalid_request", message: "upload the file as multipart/form-data with purpose=batch"})
		return
	}
	tooLarge := &apiError{status: http.StatusRequestEntityTooLarge, code: "file_too_large", param: "file",
		message: fmt.Sprintf("a batch input file is limited to %d bytes here", s.o.MaxFileBytes)}
	if r.ContentLength > s.o.MaxFileBytes+1<<20 {
		fail(w, r, tooLarge)
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		fail(w, r, invalidParam("the multipart body is malformed", "file"))
		return
	}
	now := s.now()
	jid, err := batch.NewJobID(now, s.o.Rand)
	if err != nil {
		fail(w, r, err)
		return
	}
	rec := fileRecord{ID: filePrefix + jid, CreatedAt: now.Unix()}
	var purpose, anchor, seconds string
	var stored *storedFile
	refuse := func(e error) {
		if stored != nil {
			stored.discard(context.WithoutCancel(ctx))
		}
		// Read what the client still sends, so that it sees the answer
		// rather than a reset connection.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, s.o.MaxFileBytes+1<<20))
		fail(w, r, e)
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			refuse(invalidParam("the multipart body is malformed", "file"))
			return
		}
		switch name := part.FormName(); name {
		case "file":
			if stored != nil {
				refuse(invalidParam("one file per upload", "file"))
				return
			}
			rec.Filename = part.FileName()
			stored, err = s.storeFile(ctx, t, &rec, part)
			if err != nil {
				var ae *apiError
				if errors.As(err, &ae) && ae.code == "file_too_large" {
					err = tooLarge
				}
				refuse(err)
				return
			}
		case "purpose", "expires_after[anchor]", "expires_after.anchor", "expires_after[seconds]", "expires_after.seconds":
			b, err := io.ReadAll(io.LimitReader(part, 65))
			if err != nil || len(b) > 64 {
				refuse(invalidParam(name+": at most 64 bytes", name))
				return
			}
			switch {
			case name == "purpose":
				purpose = string(b)
			case strings.HasSuffix(name, "anchor]"), strings.HasSuffix(name, ".anchor"):
				anchor = string(b)
			default:
				seconds = string(b)
			}
		default:
			refuse(invalidParam(fmt.Sprintf("unknown form field %q; send file, purpose and optionally expires_after", clip(name)), name))
			return
		}
	}
	switch {
	case stored == nil:
		refuse(invalidParam("the upload has no file field", "file"))
		return
	case purpose != "batch":
		refuse(invalidParam(fmt.Sprintf("purpose %q: this door takes batch input files only (purpose=batch)", clip(purpose)), "purpose"))
		return
	}
	if seconds != "" || anchor != "" {
		n, err := strconv.ParseInt(seconds, 10, 64)
		if err != nil || n < minFileExpiry || n > maxFileExpiry || (anchor != "" && anchor != "created_at") {
			refuse(invalidParam(fmt.Sprintf("expires_after: anchor created_at and seconds within %d..%d", minFileExpiry, maxFileExpiry), "expires_after"))
			return
		}
		rec.ExpiresAt = rec.CreatedAt + n
	}
	if err := s.markExpiry(ctx, rec.ExpiresAt, t.ID, rec.ID); err != nil {
		refuse(err)
		return
	}
	if err := stored.commit(ctx, &rec); err != nil {
		refuse(err)
		return
	}
	zerolog.Ctx(ctx).Info().Str("file_id", rec.ID).Int64("bytes", rec.Bytes).Int("lines", rec.Lines).Str("alias", rec.Model).Msg("batch input file uploaded")
	writeJSON(w, http.StatusOK, rec.object())
}

// storedFile is an upload being written: the bytes as sent and the items.
type storedFile struct {
	s        *Server
	tenantID string
	id       string
	input    object.Writer
	items    object.Writer
	closed   bool
}

// storeFile streams the file part into platform storage as it validates
// it: nothing is held whole in memory.
func (s *Server) storeFile(ctx context.Context, t tenant.Tenant, rec *fileRecord, part io.Reader) (*storedFile, error) {
	sf := &storedFile{s: s, tenantID: t.ID, id: rec.ID}
	var err error
	if sf.input, err = s.o.Blobs.Create(ctx, s.o.Containers.Uploads, fileBlob(t.ID, rec.ID, "input.jsonl"), nil); err != nil {
		return nil, err
	}
	if sf.items, err = s.o.Blobs.Create(ctx, s.o.Containers.Uploads, fileBlob(t.ID, rec.ID, "items.jsonl"), nil); err != nil {
		sf.input.Abort(err)
		return nil, err
	}
	ib := bufio.NewWriterSize(sf.items, 64<<10)
	enc := json.NewEncoder(ib)
	enc.SetEscapeHTML(false)
	v := &validator{t: t, canBatch: s.canBatch, maxLines: s.o.MaxLines, seen: map[[16]byte]struct{}{}, items: enc}
	limited := &limitReader{r: part, left: s.o.MaxFileBytes}
	sum, err := v.run(io.TeeReader(limited, sf.input))
	if err == nil {
		err = ib.Flush()
	}
	if err != nil {
		if limited.over {
			err = &apiError{status: http.StatusRequestEntityTooLarge, code: "file_too_large"}
		}
		sf.discard(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := sf.input.Close(); err != nil {
		sf.discard(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := sf.items.Close(); err != nil {
		sf.discard(context.WithoutCancel(ctx))
		return nil, err
	}
	sf.closed = true
	rec.Bytes, rec.Lines, rec.Model, rec.URL = sf.input.Size(), sum.Lines, sum.Model, sum.URL
	return sf, nil
}

// commit writes the record: from now on the file exists.
func (sf *storedFile) commit(ctx context.Context, rec *fileRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	w, err := sf.s.o.Blobs.Create(ctx, sf.s.o.Containers.Uploads, fileBlob(sf.tenantID, sf.id, "file.json"), nil)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		w.Abort(err)
		return fmt.Errorf("write file record: %w", err)
	}
	return w.Close()
}

func (sf *storedFile) discard(ctx context.Context) {
	if !sf.closed {
		sf.input.Abort(errors.New("upload refused"))
		sf.items.Abort(errors.New("upload refused"))
		return
	}
	for _, n := range []string{"input.jsonl", "items.jsonl"} {
		if err := sf.s.o.Blobs.Delete(ctx, sf.s.o.Containers.Uploads, fileBlob(sf.tenantID, sf.id, n)); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Str("file_id", sf.id).Msg("refused upload not deleted")
		}
	}
}

// limitReader reads at most left bytes and remembers whether there was more.
type limitReader struct {
	r    io.Reader
	left int64
	over bool
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n > 0 {
			l.over = true
			return 0, errors.New("file too large")
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// canBatch reports whether alias exists with a Global Batch deployment.
func (s *Server) canBatch(alias string) bool {
	if s.o.Catalog == nil {
		return false
	}
	a, ok := s.o.Catalog.Alias(alias)
	return ok && len(a.Batch) > 0
}

// record reads an uploaded file's record; another tenant's is not found.
func (s *Server) record(ctx context.Context, tenantID, id string) (fileRecord, error) {
	var rec fileRecord
	if !validUploadID(id) {
		return rec, notFound("file")
	}
	body, _, err := s.o.Blobs.Open(ctx, s.o.Containers.Uploads, fileBlob(tenantID, id, "file.json"))
	if errors.Is(err, object.ErrNotFound) {
		return rec, notFound("file")
	}
	if err != nil {
		return rec, err
	}
	defer body.Close()
	if err := json.NewDecoder(io.LimitReader(body, 64<<10)).Decode(&rec); err != nil {
		return rec, fmt.Errorf("file record %s: %w", id, err)
	}
	if s.expired(rec.ExpiresAt) {
		return rec, notFound("file")
	}
	return rec, nil
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request, t tenant.Tenant) {
	id := r.PathValue("id")
	if jobID, kind, ok := outputFileID(id); ok {
		f, err := s.outputFile(r.Context(), t.ID, jobID, kind)
		if err != nil {
			fileFail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, f.object)
		return
	}
	rec, err := s.record(r.Context(), t.ID, id)
	if err != nil {
		fileFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rec.object())
}

func (s *Server) fileContent(w http.ResponseWriter, r *http.Request, t tenant.Tenant) {
	ctx := r.Context()
	id := r.PathValue("id")
	container, name := s.o.Containers.Uploads, fileBlob(t.ID, id, "input.jsonl")
	if jobID, kind, ok := outputFileID(id); ok {
		f, err := s.outputFile(ctx, t.ID, jobID, kind)
		if err != nil {
			fileFail(w, r, err)
			return
		}
		container, name = s.o.Containers.Results, f.blob
	} else if _, err := s.record(ctx, t.ID, id); err != nil {
		fileFail(w, r, err)
		return
	}
	body, info, err := s.o.Blobs.Open(ctx, container, name)
	if err != nil {
		fileFail(w, r, err)
		return
	}
	defer body.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(info.Size, 10))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, body); err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Str("file_id", id).Msg("file content stream broken")
	}
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request, t tenant.Tenant) {
	ctx := r.Context()
	id := r.PathValue("id")
	if _, _, ok := outputFileID(id); ok {
		fail(w, r, invalidParam("a batch's output and error files are kept by offpath for the retention period and cannot be deleted here", "file_id"))
		return
	}
	if _, err := s.record(ctx, t.ID, id); err != nil {
		fileFail(w, r, err)
		return
	}
	if err := s.sweepFile(ctx, t.ID, id); err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "file", "deleted": true})
}

// Limits of the files list.
const (
	defaultFileListLimit = 10_000
	maxFileListLimit     = 10_000
)

// listFiles lists the tenant's uploaded files, newest first (order=asc
// for oldest first), after a file id.
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request, t tenant.Tenant) {
	ctx := r.Context()
	q, err := query(r, "purpose", "limit", "after", "order")
	if err != nil {
		fail(w, r, err)
		return
	}
	limit, err := limitParam(q, defaultFileListLimit, maxFileListLimit)
	if err != nil {
		fail(w, r, err)
		return
	}
	order := q.Get("order")
	if order != "" && order != "asc" && order != "desc" {
		fail(w, r, invalidParam("order: asc or desc", "order"))
		return
	}
	if p := q.Get("purpose"); p != "" && p != "batch" {
		writeJSON(w, http.StatusOK, listPage[fileObject]{Object: "list", Data: []fileObject{}})
		return
	}
	names, err := s.o.Blobs.List(ctx, s.o.Containers.Uploads, filesPrefix(t.ID))
	if err != nil {
		fail(w, r, err)
		return
	}
	var ids []string
	for _, n := range names {
		if id, ok := strings.CutSuffix(strings.TrimPrefix(n, filesPrefix(t.ID)), "/file.json"); ok && validUploadID(id) {
			ids = append(ids, id)
		}
	}
	if order == "asc" {
		for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
			ids[i], ids[j] = ids[j], ids[i]
		}
	}
	if after := q.Get("after"); after != "" {
		for i, id := range ids {
			if id == after {
				ids = ids[i+1:]
				break
			}
		}
	}
	page := listPage[fileObject]{Object: "list", Data: []fileObject{}}
	if len(ids) > limit {
		ids, page.HasMore = ids[:limit], true
	}
	for _, id := range ids {
		rec, err := s.record(ctx, t.ID, id)
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) {
				continue // deleted meanwhile
			}
			fail(w, r, err)
			return
		}
		page.Data = append(page.Data, rec.object())
	}
	page.setEnds(func(f fileObject) string { return f.ID })
	writeJSON(w, http.StatusOK, page)
}

// listPage is OpenAI's list shape.
type listPage[T any] struct {
	Object  string  `json:"object"`
	Data    []T     `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

func (p *listPage[T]) setEnds(id func(T) string) {
	if len(p.Data) > 0 {
		first, last := id(p.Data[0]), id(p.Data[len(p.Data)-1])
		p.FirstID, p.LastID = &first, &last
	}
}

// fileFail answers a file that is not there as OpenAI does.
func fileFail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, object.ErrNotFound) || errors.Is(err, batch.ErrNotFound) {
		err = notFound("file")
	}
	fail(w, r, err)
}

// query parses the query string, allowing only the named parameters, the
// function key (code) and api-version, each at most once.
func query(r *http.Request, allowed ...string) (url.Values, error) {
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalidParam("the query string is malformed", "")
	}
	for k, v := range values {
		if k == "code" || k == "api-version" {
			continue
		}
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok {
			return nil, invalidParam(fmt.Sprintf("unknown query parameter %q", clip(k)), k)
		}
		if len(v) != 1 {
			return nil, invalidParam(fmt.Sprintf("query parameter %q is given %d times", k, len(v)), k)
		}
	}
	return values, nil
}

func limitParam(q url.Values, def, maxLimit int) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, invalidParam(fmt.Sprintf("limit: an integer within 1..%d", maxLimit), "limit")
	}
	return n, nil
}

// timeOrNil is a unix time, or null for the zero time.
func timeOrNil(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	u := t.Unix()
	return &u
}
