package config

import (
	"cmp"
	"fmt"
	"strconv"
	"time"
)

// BatchPack configures the packing of small batch jobs into shared Azure
// batches. It is off unless OFFPATH_BATCH_PACK_MAX_ITEMS is set.
type BatchPack struct {
	// MaxItems is OFFPATH_BATCH_PACK_MAX_ITEMS (default 0: packing off):
	// a job of at most this many items is small.
	MaxItems int `json:"max_items"`
	// MaxTokens is OFFPATH_BATCH_PACK_MAX_TOKENS (default 200000): a small
	// job also estimates at most this many tokens (input and completion
	// allowance).
	MaxTokens int64 `json:"max_tokens"`
	// Window is OFFPATH_BATCH_PACK_WINDOW (default 10m, at most 6h): the
	// longest a small job is held waiting for others.
	Window time.Duration `json:"window"`
	// TargetLines is OFFPATH_BATCH_PACK_TARGET_LINES (default 10000, at
	// most Azure's 100000 lines a file, at least twice MaxItems): a pack
	// is submitted as soon as it has this many lines.
	TargetLines int `json:"target_lines"`
}

// Limits of the packing settings.
const (
	maxPackItems  = 10_000
	maxPackWindow = 6 * time.Hour
	maxPackLines  = 100_000
)

// loadPack reads the packing settings (their defaults are WithDefaults').
func loadPack(getenv func(string) string) (BatchPack, []error) {
	var p BatchPack
	var errs []error
	positive := func(name string, lo, hi int64, dst func(int64)) {
		s := getenv(name)
		if s == "" {
			return
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < lo || n > hi {
			errs = append(errs, fmt.Errorf("%s %q: must be within %d..%d", name, s, lo, hi))
			return
		}
		dst(n)
	}
	positive("OFFPATH_BATCH_PACK_MAX_ITEMS", 0, maxPackItems, func(n int64) { p.MaxItems = int(n) })
	positive("OFFPATH_BATCH_PACK_MAX_TOKENS", 1, 1<<40, func(n int64) { p.MaxTokens = n })
	positive("OFFPATH_BATCH_PACK_TARGET_LINES", 2, maxPackLines, func(n int64) { p.TargetLines = int(n) })
	if s := getenv("OFFPATH_BATCH_PACK_WINDOW"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil || v <= 0 || v > maxPackWindow {
			errs = append(errs, fmt.Errorf("OFFPATH_BATCH_PACK_WINDOW %q: must be a positive duration of at most %v", s, maxPackWindow))
		} else {
			p.Window = v
		}
	}
	if target := cmp.Or(p.TargetLines, DefaultBatchPackTargetLines); p.MaxItems > 0 && target < 2*p.MaxItems {
		errs = append(errs, fmt.Errorf("OFFPATH_BATCH_PACK_TARGET_LINES %d: must be at least twice OFFPATH_BATCH_PACK_MAX_ITEMS (%d), or a pack would hold one small job", target, p.MaxItems))
	}
	return p, errs
}
