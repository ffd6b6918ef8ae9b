package aoaisim

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
)

// handleFileGet serves GET .../files/{id}.
func (s *Server) handleFileGet() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.stats.route(RouteFilesGet)
		if s.inject(r.Context(), w, RouteFilesGet, "") {
			return
		}
		id := r.PathValue("id")
		now := s.clock.Now()
		f, ok := s.files.get(id, now)
		if !ok {
			writeError(w, errFileNotFound(id))
			return
		}
		writeJSON(w, http.StatusOK, f.object(now))
	}
}

// handleFileList serves GET .../files?purpose=&limit=&after=&order=, newest
// first unless order=asc.
func (s *Server) handleFileList() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.stats.route(RouteFilesList)
		if s.inject(r.Context(), w, RouteFilesList, "") {
			return
		}
		limit, after, apiErr := pageQuery(r, 10_000, 10_000)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		now := s.clock.Now()
		recs := s.files.list(now, r.URL.Query().Get("purpose"))
		objs := make([]fileObject, len(recs))
		for i, f := range recs {
			objs[i] = f.object(now)
		}
		switch r.URL.Query().Get("order") {
		case "", "desc":
		case "asc":
			for i, j := 0, len(objs)-1; i < j; i, j = i+1, j-1 {
				objs[i], objs[j] = objs[j], objs[i]
			}
		default:
			writeError(w, invalidRequest("order", "order must be 'asc' or 'desc'."))
			return
		}
		writeJSON(w, http.StatusOK, paginate(objs, func(o fileObject) string { return o.ID }, after, limit))
	}
}

// handleFileContent serves GET .../files/{id}/content as raw bytes,
// streamed from disk.
func (s *Server) handleFileContent() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.stats.route(RouteFilesContent)
		if s.inject(r.Context(), w, RouteFilesContent, "") {
			return
		}
		id := r.PathValue("id")
		rec, f, err := s.files.open(id, s.clock.Now())
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				s.log.Error().Err(err).Str("file_id", id).Msg("open file")
			}
			writeError(w, errFileNotFound(id))
			return
		}
		defer f.Close()
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Length", strconv.FormatInt(rec.Bytes, 10))
		w.WriteHeader(http.StatusOK)
		if _, err := io.Copy(w, f); err != nil {
			s.log.Debug().Err(err).Str("file_id", id).Msg("send file content")
		}
	}
}

// handleFileDelete serves DELETE .../files/{id}.
func (s *Server) handleFileDelete() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.stats.route(RouteFilesDelete)
		if s.inject(r.Context(), w, RouteFilesDelete, "") {
			return
		}
		id := r.PathValue("id")
		if !s.files.remove(id, s.clock.Now()) {
			writeError(w, errFileNotFound(id))
			return
		}
		if s.injectReply(r.Context(), w, RouteFilesDelete, "") {
			return
		}
		writeJSON(w, http.StatusOK, struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Deleted bool   `json:"deleted"`
		}{id, "file", true})
	}
}
