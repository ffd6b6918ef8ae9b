package openaiapi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// A door-facing file with an expiry (an upload with expires_after, a job's
// output or error file with output_expires_after) has a marker in the
// uploads container, named by when the file expires so that a sweep reads
// them in order: _expiry/{unix seconds, 12 digits}/{tenant}/{file id}. No
// tenant id starts with an underscore, so no tenant's area holds them. The
// marker is written before the file, so that no file with an expiry is
// ever left without one. A file without an expiry has no marker and is
// kept.
const expiryPrefix = "_expiry/"

func expiryMarker(expiresAt int64, tenantID, fileID string) string {
	return fmt.Sprintf("%s%012d/%s/%s", expiryPrefix, expiresAt, tenantID, fileID)
}

// expired reports whether a file expiring at expiresAt (0: never) is gone.
func (s *Server) expired(expiresAt int64) bool {
	return expiresAt > 0 && s.now().Unix() >= expiresAt
}

// markExpiry writes the marker of a file that expires.
func (s *Server) markExpiry(ctx context.Context, expiresAt int64, tenantID, fileID string) error {
	if expiresAt <= 0 {
		return nil
	}
	w, err := s.o.Blobs.Create(ctx, s.o.Containers.Uploads, expiryMarker(expiresAt, tenantID, fileID), nil)
	if err != nil {
		return fmt.Errorf("expiry marker of %s: %w", fileID, err)
	}
	return w.Close()
}

// DefaultSweepLimit bounds the files one Sweep deletes.
const DefaultSweepLimit = 200

// Sweep deletes offpath's copy of up to limit door-facing files whose
// expiry has passed, oldest expiry first: an upload's blobs in the
// tenant's area, a job's output and error files written by the door. The
// control plane's own copies, results and the ledger are never touched:
// the job's results stay available through the REST API. The door answers
// an expired file as not found whether or not it has been swept yet.
func (s *Server) Sweep(ctx context.Context, limit int) (int, error) {
	if s.o.Blobs == nil {
		return 0, nil
	}
	if limit <= 0 {
		limit = DefaultSweepLimit
	}
	names, err := s.o.Blobs.List(ctx, s.o.Containers.Uploads, expiryPrefix)
	if err != nil {
		return 0, fmt.Errorf("list expiry markers: %w", err)
	}
	now := s.now().Unix()
	swept := 0
	var errs []error
	for _, n := range names {
		if swept >= limit {
			break
		}
		parts := strings.Split(strings.TrimPrefix(n, expiryPrefix), "/")
		if len(parts) != 3 {
			continue
		}
		at, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil {
			continue
		}
		if at > now {
			break // the markers are in expiry order
		}
		if err := s.sweepFile(ctx, parts[1], parts[2]); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := s.o.Blobs.Delete(ctx, s.o.Containers.Uploads, n); err != nil {
			errs = append(errs, err)
			continue
		}
		swept++
		zerolog.Ctx(ctx).Info().Str("tenant", parts[1]).Str("file_id", parts[2]).
			Time("expired_at", time.Unix(at, 0).UTC()).Msg("expired file deleted")
	}
	return swept, errors.Join(errs...)
}

// sweepFile deletes a door-facing file's blobs.
func (s *Server) sweepFile(ctx context.Context, tenantID, id string) error {
	if jobID, kind, ok := outputFileID(id); ok {
		return s.o.Blobs.Delete(ctx, s.o.Containers.Results, outputBlob(tenantID, jobID, kind))
	}
	if !validUploadID(id) {
		return nil
	}
	// The record first: once it is gone the file is gone, whatever the rest.
	for _, n := range []string{"file.json", "items.jsonl", "input.jsonl"} {
		if err := s.o.Blobs.Delete(ctx, s.o.Containers.Uploads, fileBlob(tenantID, id, n)); err != nil {
			return err
		}
	}
	return nil
}
