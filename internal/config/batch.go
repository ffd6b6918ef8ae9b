package config

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Batch configures the batch control plane. It is nil when
// OFFPATH_AOAI_ENDPOINT is not set: the batch endpoints then answer 503 and
// the batch-poll timer does nothing.
type Batch struct {
	// Endpoint is OFFPATH_AOAI_ENDPOINT, the Azure OpenAI resource
	// (https://<name>.openai.azure.com; plain http only on loopback, for
	// the simulator).
	Endpoint string `json:"endpoint"`
	// Surface is OFFPATH_AOAI_SURFACE: "v1" (default) or "classic";
	// APIVersion is OFFPATH_AOAI_API_VERSION for the classic surface.
	Surface    string `json:"surface"`
	APIVersion string `json:"api_version,omitempty"`
	// APIKey is OFFPATH_AOAI_API_KEY (local development); without it the
	// handler uses its managed identity (OFFPATH_AOAI_CLIENT_ID for a
	// user-assigned one).
	APIKey   string `json:"-"`
	ClientID string `json:"client_id,omitempty"`
	// BlobServiceURL is where batch inputs and results live when storage
	// is reached with a managed identity: <setting>__blobServiceUri, or
	// https://<account>.blob.core.windows.net from <setting>__accountName.
	// Empty when the storage connection string is used.
	BlobServiceURL string `json:"blob_service_url,omitempty"`
	// PollInterval is OFFPATH_BATCH_POLL_INTERVAL (default 60s, Azure's
	// advice): the least time between two polls of one Azure batch.
	PollInterval time.Duration `json:"poll_interval"`
	// LeaseTTL is OFFPATH_BATCH_LEASE_TTL (default: the invocation timeout
	// plus a minute): how long a poller's claim on a job lasts.
	LeaseTTL time.Duration `json:"lease_ttl"`
	// Concurrency is OFFPATH_BATCH_POLL_CONCURRENCY (default 16).
	Concurrency int `json:"concurrency"`
	// Quota is OFFPATH_BATCH_QUOTA, "deployment=tokens,...": each Global
	// Batch deployment's enqueued-token limit.
	Quota map[string]int64 `json:"quota,omitempty"`
	// CoolOff is OFFPATH_BATCH_COOLOFF (default 10m): how long a batch
	// deployment that refused a part for quota, or failed creates
	// repeatedly, is skipped by parts that have another.
	CoolOff time.Duration `json:"cool_off"`
	// BackoffBase is OFFPATH_BATCH_BACKOFF_BASE (default 30s): the first
	// wait after Azure refuses a job for quota, doubled on each refusal.
	BackoffBase time.Duration `json:"backoff_base"`
	// HeldAlert is OFFPATH_BATCH_HELD_ALERT (default 6h); OverdueMargin
	// OFFPATH_BATCH_OVERDUE_MARGIN (default 2h).
	HeldAlert     time.Duration `json:"held_alert"`
	OverdueMargin time.Duration `json:"overdue_margin"`
	// AlertWebhook is OFFPATH_ALERT_WEBHOOK_URL: alerts are also POSTed
	// there (secret: it may carry a token).
	AlertWebhook string `json:"-"`
}

// loadBatch reads the batch settings; it leaves c.Batch nil without an
// endpoint.
func (c *Handler) loadBatch(getenv func(string) string) []error {
	endpoint := strings.TrimRight(getenv("OFFPATH_AOAI_ENDPOINT"), "/")
	if endpoint == "" {
		return nil
	}
	var errs []error
	b := &Batch{Endpoint: endpoint, Surface: cmp.Or(getenv("OFFPATH_AOAI_SURFACE"), "v1"), APIVersion: getenv("OFFPATH_AOAI_API_VERSION"),
		APIKey: getenv("OFFPATH_AOAI_API_KEY"), ClientID: getenv("OFFPATH_AOAI_CLIENT_ID"), Concurrency: 16,
		PollInterval: time.Minute, LeaseTTL: c.InvocationTimeout + time.Minute, BackoffBase: 30 * time.Second, CoolOff: 10 * time.Minute, HeldAlert: 6 * time.Hour, OverdueMargin: 2 * time.Hour,
		AlertWebhook: getenv("OFFPATH_ALERT_WEBHOOK_URL")}
	if u, err := url.Parse(endpoint); err != nil || u.Host == "" || u.Path != "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname()))) {
		errs = append(errs, fmt.Errorf("OFFPATH_AOAI_ENDPOINT %q: must be the resource's https URL without a path (http only on loopback)", endpoint))
	}
	if b.Surface != "v1" && b.Surface != "classic" {
		errs = append(errs, fmt.Errorf("OFFPATH_AOAI_SURFACE %q: must be v1 or classic", b.Surface))
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"OFFPATH_BATCH_POLL_INTERVAL", &b.PollInterval}, {"OFFPATH_BATCH_LEASE_TTL", &b.LeaseTTL}, {"OFFPATH_BATCH_BACKOFF_BASE", &b.BackoffBase}, {"OFFPATH_BATCH_COOLOFF", &b.CoolOff},
		{"OFFPATH_BATCH_HELD_ALERT", &b.HeldAlert}, {"OFFPATH_BATCH_OVERDUE_MARGIN", &b.OverdueMargin}} {
		if s := getenv(d.name); s != "" {
			v, err := time.ParseDuration(s)
			if err != nil || v <= 0 {
				errs = append(errs, fmt.Errorf("%s %q: must be a positive duration", d.name, s))
				continue
			}
			*d.dst = v
		}
	}
	if s := getenv("OFFPATH_BATCH_POLL_CONCURRENCY"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 256 {
			errs = append(errs, fmt.Errorf("OFFPATH_BATCH_POLL_CONCURRENCY %q: must be within 1..256", s))
		} else {
			b.Concurrency = n
		}
	}
	var err error
	if b.Quota, err = parseQuota(getenv("OFFPATH_BATCH_QUOTA")); err != nil {
		errs = append(errs, fmt.Errorf("OFFPATH_BATCH_QUOTA: %w", err))
	}
	if w := b.AlertWebhook; w != "" {
		if u, err := url.Parse(w); err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname()))) {
			errs = append(errs, errors.New("OFFPATH_ALERT_WEBHOOK_URL: must be an https URL (http only on loopback)"))
		}
	}
	if c.Storage.ConnectionString == "" && c.Storage.Setting != "" {
		switch uri, account := getenv(c.Storage.Setting+"__blobServiceUri"), getenv(c.Storage.Setting+"__accountName"); {
		case uri != "":
			b.BlobServiceURL = strings.TrimRight(uri, "/")
		case account != "":
			b.BlobServiceURL = "https://" + account + ".blob.core.windows.net"
		default:
			errs = append(errs, fmt.Errorf("%s__blobServiceUri or __accountName is needed for batch inputs and results", c.Storage.Setting))
		}
	}
	c.Batch = b
	return errs
}

// parseQuota reads "deployment=tokens,...".
func parseQuota(s string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, v, ok := strings.Cut(part, "=")
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if !ok || strings.TrimSpace(name) == "" || err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not deployment=tokens", part)
		}
		out[strings.TrimSpace(name)] = n
	}
	return out, nil
}
