package aoaisim

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// File purposes the simulator knows. Only "batch" input files count toward
// the per-resource caps; outputs are "batch_output".
const (
	purposeBatch       = "batch"
	purposeBatchOutput = "batch_output"
)

// fileRecord is the metadata of a stored file; the bytes live on disk at path.
type fileRecord struct {
	ID        string
	Filename  string
	Purpose   string
	Bytes     int64
	Lines     int
	CreatedAt time.Time
	ExpiresAt time.Time // zero: never
	ReadyAt   time.Time // status "pending" before, "processed" from then
	path      string
}

func (f *fileRecord) expired(now time.Time) bool {
	return !f.ExpiresAt.IsZero() && !now.Before(f.ExpiresAt)
}

// errFileCap is returned when an upload would exceed a file-count cap.
var errFileCap = errors.New("file cap reached")

// fileStore keeps file metadata in memory and contents on disk, so that a
// 200 MB upload costs disk, not RSS. Expired files disappear from every view
// at once and from disk at the next sweep.
type fileStore struct {
	dir string

	mu    sync.Mutex
	byID  map[string]*fileRecord
	order []*fileRecord // creation order
}

func newFileStore(dir string) *fileStore {
	return &fileStore{dir: dir, byID: make(map[string]*fileRecord)}
}

// create makes a new empty file in the store's directory for a record to be
// added later.
func (fs *fileStore) create(pattern string) (*os.File, error) {
	f, err := os.CreateTemp(fs.dir, pattern)
	if err != nil {
		return nil, fmt.Errorf("create file: %w", err)
	}
	return f, nil
}

// add registers rec. When capped, batch input files are counted first:
// without an expiry against maxNoExpiry, with one against maxExpiry.
func (fs *fileStore) add(rec *fileRecord, now time.Time, capped bool, maxNoExpiry, maxExpiry int) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if capped && rec.Purpose == purposeBatch {
		noExp, withExp := 0, 0
		for _, f := range fs.order {
			if f.Purpose != purposeBatch || f.expired(now) {
				continue
			}
			if f.ExpiresAt.IsZero() {
				noExp++
			} else {
				withExp++
			}
		}
		if rec.ExpiresAt.IsZero() && noExp >= maxNoExpiry {
			return fmt.Errorf("%w: %d batch files without expiry", errFileCap, maxNoExpiry)
		}
		if !rec.ExpiresAt.IsZero() && withExp >= maxExpiry {
			return fmt.Errorf("%w: %d batch files with expiry", errFileCap, maxExpiry)
		}
	}
	fs.byID[rec.ID] = rec
	fs.order = append(fs.order, rec)
	return nil
}

// get returns a live (not deleted, not expired) file.
func (fs *fileStore) get(id string, now time.Time) (*fileRecord, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.byID[id]
	if !ok || f.expired(now) {
		return nil, false
	}
	return f, true
}

// open returns a live file's metadata and an open handle on its contents.
// The handle stays valid if the file is deleted meanwhile.
func (fs *fileStore) open(id string, now time.Time) (*fileRecord, *os.File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.byID[id]
	if !ok || f.expired(now) {
		return nil, nil, os.ErrNotExist
	}
	h, err := os.Open(f.path)
	if err != nil {
		return nil, nil, fmt.Errorf("open file %s: %w", id, err)
	}
	return f, h, nil
}

// remove deletes a file; it reports whether the file was live.
func (fs *fileStore) remove(id string, now time.Time) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.byID[id]
	if !ok {
		return false
	}
	fs.dropLocked(f)
	return !f.expired(now)
}

func (fs *fileStore) dropLocked(f *fileRecord) {
	delete(fs.byID, f.ID)
	if i := slices.Index(fs.order, f); i >= 0 {
		fs.order = slices.Delete(fs.order, i, i+1)
	}
	_ = os.Remove(f.path)
}

// list returns live files, newest first, optionally of one purpose.
func (fs *fileStore) list(now time.Time, purpose string) []*fileRecord {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]*fileRecord, 0, len(fs.order))
	for i := len(fs.order) - 1; i >= 0; i-- {
		f := fs.order[i]
		if f.expired(now) || (purpose != "" && f.Purpose != purpose) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// sweep deletes expired files and returns how many.
func (fs *fileStore) sweep(now time.Time) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var gone []*fileRecord
	for _, f := range fs.order {
		if f.expired(now) {
			gone = append(gone, f)
		}
	}
	for _, f := range gone {
		fs.dropLocked(f)
	}
	return len(gone)
}

// closeAll forgets every file (their directory is removed by the server).
func (fs *fileStore) closeAll() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.byID = make(map[string]*fileRecord)
	fs.order = nil
}
