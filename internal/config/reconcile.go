package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/reconcile"
)

// Reconcile configures the reconcile timer, which compares the ledger with
// Azure Monitor's token metrics of the Azure OpenAI resource (AOAI's
// ResourceID, read with AOAI's identity). It is nil without
// OFFPATH_AOAI_RESOURCE_ID (the timer then logs that it has nothing to do).
type Reconcile struct {
	// MonitorEndpoint is OFFPATH_MONITOR_ENDPOINT: Azure Resource Manager's
	// endpoint (default the public cloud's; the simulator locally).
	MonitorEndpoint string `json:"monitor_endpoint,omitempty"`
	// Tolerance is OFFPATH_RECONCILE_TOLERANCE, a fraction of Azure's count
	// (default 0.01); MinTokens OFFPATH_RECONCILE_MIN_TOKENS, a difference
	// that never alerts (default 100); Settle OFFPATH_RECONCILE_SETTLE, how
	// long after an hour its metrics are final (default 20m).
	Tolerance float64       `json:"tolerance"`
	MinTokens int64         `json:"min_tokens"`
	Settle    time.Duration `json:"settle"`
	// Period is OFFPATH_RECONCILE_PERIOD, the span compared at once: 1m,
	// 5m, 15m, 30m or 1h (the default).
	Period time.Duration `json:"period"`
	// GlobalBatch is OFFPATH_RECONCILE_GLOBAL_BATCH: "day" (the default)
	// compares Global Batch deployments per UTC day, "skip" not at all.
	GlobalBatch reconcile.BatchMode `json:"global_batch"`
}

func (c *Handler) parseReconcile(getenv func(string) string) []error {
	if c.AOAI.ResourceID == "" {
		return nil
	}
	var errs []error
	r := &Reconcile{MonitorEndpoint: strings.TrimRight(getenv("OFFPATH_MONITOR_ENDPOINT"), "/")}
	if s := getenv("OFFPATH_RECONCILE_TOLERANCE"); s != "" {
		if v, err := strconv.ParseFloat(s, 64); err != nil || v <= 0 || v >= 1 {
			errs = append(errs, fmt.Errorf("OFFPATH_RECONCILE_TOLERANCE %q: must be a fraction between 0 and 1", s))
		} else {
			r.Tolerance = v
		}
	}
	if s := getenv("OFFPATH_RECONCILE_MIN_TOKENS"); s != "" {
		if v, err := strconv.ParseInt(s, 10, 64); err != nil || v < 1 {
			errs = append(errs, fmt.Errorf("OFFPATH_RECONCILE_MIN_TOKENS %q: must be a positive number of tokens", s))
		} else {
			r.MinTokens = v
		}
	}
	if s := getenv("OFFPATH_RECONCILE_SETTLE"); s != "" {
		if v, err := time.ParseDuration(s); err != nil || v <= 0 || v >= 24*time.Hour {
			errs = append(errs, fmt.Errorf("OFFPATH_RECONCILE_SETTLE %q: must be a duration between 0 and 24h", s))
		} else {
			r.Settle = v
		}
	}
	if s := getenv("OFFPATH_RECONCILE_PERIOD"); s != "" {
		if v, err := time.ParseDuration(s); err != nil || !slices.Contains(reconcile.Periods, v) {
			errs = append(errs, fmt.Errorf("OFFPATH_RECONCILE_PERIOD %q: must be one of 1m, 5m, 15m, 30m, 1h", s))
		} else {
			r.Period = v
		}
	}
	switch s := reconcile.BatchMode(getenv("OFFPATH_RECONCILE_GLOBAL_BATCH")); s {
	case "":
	case reconcile.BatchByDay, reconcile.BatchSkip:
		r.GlobalBatch = s
	default:
		errs = append(errs, fmt.Errorf("OFFPATH_RECONCILE_GLOBAL_BATCH %q: must be %q (compare Global Batch deployments per UTC day) or %q (do not compare them)",
			s, reconcile.BatchByDay, reconcile.BatchSkip))
	}
	if ep := r.MonitorEndpoint; ep != "" && !strings.HasPrefix(ep, "https://") {
		errs = append(errs, fmt.Errorf("OFFPATH_MONITOR_ENDPOINT %q: must be an https URL", ep))
	}
	c.Reconcile = r
	return errs
}
