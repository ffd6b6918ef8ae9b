package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Reconcile configures the reconcile timer, which compares the ledger with
// Azure Monitor's token metrics of the Azure OpenAI resource. It is nil
// without OFFPATH_AOAI_RESOURCE_ID (the timer then logs that it has
// nothing to do).
type Reconcile struct {
	// ResourceID is OFFPATH_AOAI_RESOURCE_ID, the resource's ARM id
	// (/subscriptions/…/providers/Microsoft.CognitiveServices/accounts/…).
	ResourceID string `json:"resource_id"`
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
	// ClientID is OFFPATH_AOAI_CLIENT_ID: the user-assigned identity that
	// holds Monitoring Reader on the resource (empty: the system one).
	ClientID string `json:"client_id,omitempty"`
}

func (c *Handler) loadReconcile(getenv func(string) string) []error {
	id := strings.TrimSpace(getenv("OFFPATH_AOAI_RESOURCE_ID"))
	if id == "" {
		return nil
	}
	var errs []error
	r := &Reconcile{ResourceID: id, MonitorEndpoint: strings.TrimRight(getenv("OFFPATH_MONITOR_ENDPOINT"), "/"),
		Tolerance: 0.01, MinTokens: 100, Settle: 20 * time.Minute, ClientID: getenv("OFFPATH_AOAI_CLIENT_ID")}
	if !strings.Contains(strings.ToLower(id), "/providers/microsoft.cognitiveservices/accounts/") {
		errs = append(errs, fmt.Errorf("OFFPATH_AOAI_RESOURCE_ID %q: must be the Azure OpenAI resource's id (…/providers/Microsoft.CognitiveServices/accounts/{name})", id))
	}
	if s := getenv("OFFPATH_RECONCILE_TOLERANCE"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 || v >= 1 {
			errs = append(errs, fmt.Errorf("OFFPATH_RECONCILE_TOLERANCE %q: must be a fraction between 0 and 1", s))
		}
		r.Tolerance = v
	}
	if s := getenv("OFFPATH_RECONCILE_MIN_TOKENS"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 1 {
			errs = append(errs, fmt.Errorf("OFFPATH_RECONCILE_MIN_TOKENS %q: must be a positive number of tokens", s))
		}
		r.MinTokens = v
	}
	if s := getenv("OFFPATH_RECONCILE_SETTLE"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil || v <= 0 || v >= 24*time.Hour {
			errs = append(errs, fmt.Errorf("OFFPATH_RECONCILE_SETTLE %q: must be a duration between 0 and 24h", s))
		}
		r.Settle = v
	}
	if ep := r.MonitorEndpoint; ep != "" && !strings.HasPrefix(ep, "https://") {
		errs = append(errs, fmt.Errorf("OFFPATH_MONITOR_ENDPOINT %q: must be an https URL", ep))
	}
	c.Reconcile = r
	return errs
}
