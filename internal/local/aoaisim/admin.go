package aoaisim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// State is what GET /_sim/state returns: the clock, every batch and file,
// and the counters.
type State struct {
	Now     time.Time     `json:"now"`
	Speed   float64       `json:"speed"`
	Batches []BatchState  `json:"batches"`
	Files   []FileState   `json:"files"`
	Faults  []FaultRule   `json:"faults"`
	Stats   Stats         `json:"stats"`
	Config  adminSettings `json:"config"`
}

type adminSettings struct {
	Batch         BatchConfig   `json:"batch"`
	Files         FilesConfig   `json:"files"`
	ContentFilter ContentFilter `json:"content_filter"`
	Quirks        Quirks        `json:"quirks"`
	RateLimitsOff bool          `json:"disable_rate_limits"`
}

// BatchState summarises a batch for introspection.
type BatchState struct {
	ID             string            `json:"id"`
	Deployment     string            `json:"deployment"`
	Status         string            `json:"status"`
	InputFileID    string            `json:"input_file_id"`
	OutputFileID   string            `json:"output_file_id,omitempty"`
	ErrorFileID    string            `json:"error_file_id,omitempty"`
	Total          int               `json:"total"`
	Completed      int               `json:"completed"`
	Failed         int               `json:"failed"`
	EnqueuedTokens int64             `json:"enqueued_tokens"`
	Reserved       int64             `json:"reserved_tokens"`
	CreatedAt      time.Time         `json:"created_at"`
	ExpiresAt      time.Time         `json:"expires_at"`
	Metadata       map[string]string `json:"metadata,omitempty"`
}

// FileState summarises a file for introspection.
type FileState struct {
	ID        string     `json:"id"`
	Filename  string     `json:"filename"`
	Purpose   string     `json:"purpose"`
	Bytes     int64      `json:"bytes"`
	Lines     int        `json:"lines"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// State returns a snapshot of the simulator.
func (s *Server) State() State {
	now := s.clock.Now()
	st := State{Now: now, Speed: s.clock.Speed(), Faults: s.faults.list(), Stats: s.Stats(),
		Batches: []BatchState{}, Files: []FileState{},
		Config: adminSettings{Batch: s.cfg.Batch, Files: s.cfg.Files, ContentFilter: s.cfg.ContentFilter,
			Quirks: s.cfg.Quirks, RateLimitsOff: s.cfg.DisableRateLimits}}
	s.batches.mu.Lock()
	for _, b := range s.batches.order {
		st.Batches = append(st.Batches, BatchState{
			ID: b.ID, Deployment: b.Deployment, Status: b.Status, InputFileID: b.InputFileID,
			OutputFileID: b.OutputFileID, ErrorFileID: b.ErrorFileID, Total: b.Total, Completed: b.Completed,
			Failed: b.Failed, EnqueuedTokens: b.EstimatedTokens, Reserved: b.Reserved, CreatedAt: b.CreatedAt,
			ExpiresAt: b.ExpiresAt, Metadata: b.Metadata,
		})
	}
	s.batches.mu.Unlock()
	for _, f := range s.files.list(now, "") {
		fs := FileState{ID: f.ID, Filename: f.Filename, Purpose: f.Purpose, Bytes: f.Bytes, Lines: f.Lines, CreatedAt: f.CreatedAt}
		if !f.ExpiresAt.IsZero() {
			e := f.ExpiresAt
			fs.ExpiresAt = &e
		}
		st.Files = append(st.Files, fs)
	}
	return st
}

func (s *Server) handleAdminState(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.State())
}

func (s *Server) handleAdminFaultsGet(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Rules []FaultRule `json:"rules"`
	}{s.faults.list()})
}

// handleAdminFaultsSet replaces the rules with {"rules":[...]}.
func (s *Server) handleAdminFaultsSet(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Rules []FaultRule `json:"rules"`
	}
	if err := decodeAdmin(r, &req); err != nil {
		writeError(w, invalidRequest("", err.Error()))
		return
	}
	if err := s.faults.set(req.Rules); err != nil {
		writeError(w, invalidRequest("rules", err.Error()))
		return
	}
	s.log.Info().Int("rules", len(req.Rules)).Msg("fault rules replaced")
	s.handleAdminFaultsGet(w, r)
}

func (s *Server) handleAdminFaultsClear(w http.ResponseWriter, r *http.Request) {
	_ = s.faults.set(nil)
	s.handleAdminFaultsGet(w, r)
}

// handleAdminClock accepts {"advance":"25h"} and/or {"speed":3600}.
func (s *Server) handleAdminClock(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Advance *Duration `json:"advance"`
		Speed   *float64  `json:"speed"`
	}
	if err := decodeAdmin(r, &req); err != nil {
		writeError(w, invalidRequest("", err.Error()))
		return
	}
	if req.Speed != nil {
		if *req.Speed < 0 || *req.Speed > MaxSpeed {
			writeError(w, invalidRequest("speed", fmt.Sprintf("speed must be between 0 and %v.", MaxSpeed)))
			return
		}
		s.clock.SetSpeed(*req.Speed)
	}
	if req.Advance != nil {
		s.clock.Advance(req.Advance.D())
	}
	writeJSON(w, http.StatusOK, struct {
		Now   time.Time `json:"now"`
		Speed float64   `json:"speed"`
	}{s.clock.Now(), s.clock.Speed()})
}

func decodeAdmin(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode admin request: %w", err)
	}
	return nil
}
