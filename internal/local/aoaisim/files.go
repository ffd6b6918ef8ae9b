package aoaisim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// fileObject is the Files API representation of a file.
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

func (f *fileRecord) object(now time.Time) fileObject {
	o := fileObject{ID: f.ID, Object: "file", Bytes: f.Bytes, CreatedAt: f.CreatedAt.Unix(),
		Filename: f.Filename, Purpose: f.Purpose, Status: "processed"}
	if now.Before(f.ReadyAt) {
		o.Status = "pending"
	}
	if !f.ExpiresAt.IsZero() {
		e := f.ExpiresAt.Unix()
		o.ExpiresAt = &e
	}
	return o
}

func errFileNotFound(id string) *apiError {
	e := newAPIError(http.StatusNotFound, "404", fmt.Sprintf("File not found: %s.", id))
	e.Param, e.Type = strPtr("file_id"), strPtr("invalid_request_error")
	return e
}

// upload is the parsed multipart form of a file upload.
type upload struct {
	file      *os.File
	filename  string
	bytes     int64
	lines     int
	purpose   string
	anchor    string
	seconds   string
	tooLarge  bool
	hasExpiry bool
	kept      bool // the file became a record; do not remove it
}

// discard removes the received file unless it was kept.
func (up *upload) discard() {
	if up == nil || up.file == nil || up.kept {
		return
	}
	_ = up.file.Close()
	_ = os.Remove(up.file.Name())
}

// handleFileCreate serves POST .../files: multipart with file, purpose and
// optionally expires_after[anchor] / expires_after[seconds] (the dotted
// spelling of Azure's curl sample is accepted too). The file is streamed to
// disk, never held in memory.
func (s *Server) handleFileCreate(sf surface) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.stats.route(RouteFilesCreate)
		if s.inject(r.Context(), w, RouteFilesCreate, "") {
			return
		}
		up, err := s.readUpload(r)
		defer up.discard()
		if err != nil {
			writeError(w, invalidRequest("", fmt.Sprintf("The multipart request could not be read: %v", err)))
			return
		}
		now := s.clock.Now()
		rec, apiErr := s.checkUpload(up, now)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		if err := up.file.Close(); err != nil {
			writeError(w, errFault(http.StatusInternalServerError))
			return
		}
		rec.path = up.file.Name()
		if err := s.files.add(rec, now, true, s.cfg.Files.MaxWithoutExpiry, s.cfg.Files.MaxWithExpiry); err != nil {
			writeError(w, invalidRequest("", fmt.Sprintf("The upload would exceed the resource's file limit (%v). Delete files or set expires_after.", err)))
			return
		}
		up.kept = true
		s.log.Debug().Str("file_id", rec.ID).Int64("bytes", rec.Bytes).Int("lines", rec.Lines).Msg("file uploaded")
		if s.injectReply(r.Context(), w, RouteFilesCreate, "") {
			return
		}
		status := http.StatusOK
		if sf.classic { // the classic API documents 201 with a location
			status = http.StatusCreated
			w.Header().Set("Location", sf.prefix+"/files/"+rec.ID)
		}
		writeJSON(w, status, rec.object(now))
	}
}

func (s *Server) readUpload(r *http.Request) (*upload, error) {
	up := &upload{}
	mr, err := r.MultipartReader()
	if err != nil {
		return up, fmt.Errorf("read multipart: %w", err)
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			// The closing boundary is not the end of the request: a body
			// shorter than its Content-Length (a client that broke off) must
			// not be stored, so read to the declared end.
			if _, err := io.Copy(io.Discard, r.Body); err != nil {
				return up, fmt.Errorf("read request body: %w", err)
			}
			return up, nil
		}
		if err != nil {
			return up, fmt.Errorf("next part: %w", err)
		}
		switch name := part.FormName(); name {
		case "file":
			if err := s.receiveFile(up, part); err != nil {
				return up, err
			}
		case "purpose", "expires_after[anchor]", "expires_after.anchor", "expires_after[seconds]", "expires_after.seconds":
			v, err := io.ReadAll(io.LimitReader(part, 1024))
			if err != nil {
				return up, fmt.Errorf("read field %s: %w", name, err)
			}
			switch {
			case name == "purpose":
				up.purpose = string(v)
			case strings.HasSuffix(name, "anchor"):
				up.anchor, up.hasExpiry = string(v), true
			default:
				up.seconds, up.hasExpiry = string(v), true
			}
		}
	}
}

// receiveFile streams the file part to disk, counting bytes and lines and
// stopping at the size limit.
func (s *Server) receiveFile(up *upload, part *multipart.Part) error {
	if up.file != nil {
		return errors.New("more than one file part")
	}
	f, err := s.files.create("upload-*.jsonl")
	if err != nil {
		return err
	}
	up.file, up.filename = f, part.FileName()
	buf := make([]byte, 256<<10)
	var last byte
	for {
		n, rerr := part.Read(buf)
		if n > 0 {
			if up.bytes+int64(n) > s.cfg.Files.MaxBytes {
				// Read the rest so the client gets the 400 instead of a reset.
				up.tooLarge = true
				if _, err := io.Copy(io.Discard, part); err != nil {
					return fmt.Errorf("discard oversized file: %w", err)
				}
				return nil
			}
			chunk := buf[:n]
			up.bytes += int64(n)
			up.lines += bytes.Count(chunk, []byte{'\n'})
			last = chunk[n-1]
			if _, err := f.Write(chunk); err != nil {
				return fmt.Errorf("write upload: %w", err)
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("read file part: %w", rerr)
		}
	}
	if up.bytes > 0 && last != '\n' {
		up.lines++
	}
	return nil
}

// checkUpload validates the form and builds the record.
func (s *Server) checkUpload(up *upload, now time.Time) (*fileRecord, *apiError) {
	switch {
	case up.file == nil:
		return nil, invalidRequest("file", "The 'file' field is required.")
	case up.tooLarge:
		return nil, invalidRequest("file", fmt.Sprintf("The file exceeds the maximum size of %d bytes.", s.cfg.Files.MaxBytes))
	case up.purpose == "":
		return nil, invalidRequest("purpose", "The 'purpose' field is required.")
	}
	switch up.purpose {
	case purposeBatch, "fine-tune", "assistants", "vision", "user_data", "evals":
	default:
		return nil, invalidRequest("purpose", fmt.Sprintf("'%s' is not a supported purpose; use 'batch'.", up.purpose))
	}
	rec := &fileRecord{ID: newFileID(), Filename: up.filename, Purpose: up.purpose, Bytes: up.bytes,
		Lines: up.lines, CreatedAt: now, ReadyAt: now.Add(s.cfg.Files.ProcessingTime.D())}
	if rec.Filename == "" {
		rec.Filename = "file.jsonl"
	}
	if up.hasExpiry {
		if up.anchor != "" && up.anchor != "created_at" {
			return nil, invalidRequest("expires_after.anchor", fmt.Sprintf("'%s' is not a valid anchor; use 'created_at'.", up.anchor))
		}
		secs, err := strconv.ParseInt(up.seconds, 10, 64)
		minS, maxS := int64(s.cfg.Files.MinExpiry.D()/time.Second), int64(s.cfg.Files.MaxExpiry.D()/time.Second)
		if err != nil || secs < minS || secs > maxS {
			return nil, invalidRequest("expires_after.seconds", fmt.Sprintf("expires_after.seconds must be an integer between %d and %d.", minS, maxS))
		}
		rec.ExpiresAt = now.Add(time.Duration(secs) * time.Second)
	}
	return rec, nil
}
