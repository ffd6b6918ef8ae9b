package config

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Ingest configures the queue path: the ingest-enqueue and ingest-process
// functions.
type Ingest struct {
	// Alias is OFFPATH_INGEST_ALIAS (default "ingest"): the model alias
	// documents are ingested with; tenants must be allowed it.
	Alias string `json:"alias"`
	// MaxDocumentBytes is OFFPATH_INGEST_MAX_BYTES (default 100 MiB);
	// HeavyThreshold OFFPATH_INGEST_HEAVY_BYTES (default 8 MiB), the size
	// from which documents go to the heavy queue (AKS).
	MaxDocumentBytes int64 `json:"max_document_bytes"`
	HeavyThreshold   int64 `json:"heavy_threshold"`
	// ChunkTokens and ChunkOverlap are OFFPATH_INGEST_CHUNK_TOKENS and
	// OFFPATH_INGEST_CHUNK_OVERLAP (0: package chunk's 512 and 64).
	ChunkTokens  int `json:"chunk_tokens,omitempty"`
	ChunkOverlap int `json:"chunk_overlap,omitempty"`
	// MaxDeliveryCount and HeavyMaxDeliveryCount are
	// OFFPATH_INGEST_MAX_DELIVERY_COUNT and
	// OFFPATH_INGEST_HEAVY_MAX_DELIVERY_COUNT (default 10, Azure's): the
	// MaxDeliveryCount of the doc-ingest and doc-ingest-heavy queues, so
	// that the delivery after which Service Bus dead-letters a message
	// records its document as dead-lettered. Keep them equal to the
	// queues' own (the infra sets both).
	MaxDeliveryCount      int `json:"max_delivery_count"`
	HeavyMaxDeliveryCount int `json:"heavy_max_delivery_count"`
	// BlobServiceURL is where documents and results live when storage is
	// reached with a managed identity (<setting>__blobServiceUri, or from
	// __accountName); empty with a connection string.
	BlobServiceURL string `json:"blob_service_url,omitempty"`
	// Budget is how long processing one message may take, waits for 429s
	// and 5xx included: the invocation timeout, or less if host.json's
	// Service Bus maxAutoLockRenewalDuration is shorter than it (less a
	// tenth, at least 5 s), so the host never loses the lock of a message
	// being processed.
	Budget time.Duration `json:"budget"`

	// AOAI is the Azure OpenAI client of the queue path; nil without
	// OFFPATH_AOAI_ENDPOINT (the process functions then fail transiently,
	// and messages wait in the queue).
	AOAI *AOAI `json:"aoai,omitempty"`
}

// AOAI configures the queue path's model client and its rate limiter.
type AOAI struct {
	// Endpoint, APIKey and ClientID are OFFPATH_AOAI_ENDPOINT,
	// OFFPATH_AOAI_API_KEY (local development; secret) and
	// OFFPATH_AOAI_CLIENT_ID (a user-assigned identity), shared with the
	// batch path.
	Endpoint string `json:"endpoint"`
	APIKey   string `json:"-"`
	ClientID string `json:"client_id,omitempty"`
	// APIVersion is OFFPATH_AOAI_API_VERSION (empty: package llm's GA
	// default).
	APIVersion string `json:"api_version,omitempty"`
	// MaxAttempts, BaseBackoff and MaxBackoff are OFFPATH_AOAI_MAX_ATTEMPTS,
	// OFFPATH_AOAI_BASE_BACKOFF and OFFPATH_AOAI_MAX_BACKOFF (0: package
	// llm's defaults, 6, 500ms and 8s).
	MaxAttempts int           `json:"max_attempts,omitempty"`
	BaseBackoff time.Duration `json:"base_backoff,omitempty"`
	MaxBackoff  time.Duration `json:"max_backoff,omitempty"`
	// Quotas are the deployments' whole quotas, tokens and requests per
	// minute, from OFFPATH_AOAI_LIMITS (JSON {"deployment": {"tpm": N,
	// "rpm": N}}). With SharedQuota every running instance of both pools
	// shares them through leases in Table Storage (package ratelimit).
	Quotas map[string]Limit `json:"quotas,omitempty"`
	// SharedQuota is OFFPATH_AOAI_SHARED_QUOTA (default true): share the
	// Quotas with the fleet. false: each instance keeps its static share.
	SharedQuota bool `json:"shared_quota"`
	// LeaseRenew and LeaseTTL are OFFPATH_AOAI_LEASE_RENEW and
	// OFFPATH_AOAI_LEASE_TTL (0: package ratelimit's 10 s and 30 s): how
	// often an instance renews its part of a shared quota, and how long an
	// unrenewed part lasts.
	LeaseRenew time.Duration `json:"lease_renew,omitempty"`
	LeaseTTL   time.Duration `json:"lease_ttl,omitempty"`
	// Limits are each deployment's static per-instance share: the limiter's
	// budget when the quota is not shared, and the safe fallback while the
	// lease store cannot be reached when it is. The Quotas divided by
	// OFFPATH_AOAI_INSTANCES (the most instances that may run, default 1);
	// OFFPATH_AOAI_TPM_BUDGET and OFFPATH_AOAI_RPM_BUDGET (already per
	// instance, written by `offpath sizing`) set the share of the ingestion
	// alias's chat deployment. No limits: no limiter.
	Limits map[string]Limit `json:"limits,omitempty"`
	// Instances is OFFPATH_AOAI_INSTANCES.
	Instances int `json:"instances"`
	// ChatTPM and ChatRPM are OFFPATH_AOAI_TPM_BUDGET and _RPM_BUDGET,
	// applied to the chat deployment once the catalog is known.
	ChatTPM int64 `json:"chat_tpm_budget,omitempty"`
	ChatRPM int64 `json:"chat_rpm_budget,omitempty"`
}

// Limit is a deployment's tokens and requests per minute.
type Limit struct {
	TPM int64 `json:"tpm"`
	RPM int64 `json:"rpm"`
}

// DefaultMaxDeliveryCount is Service Bus's default MaxDeliveryCount;
// MaxMaxDeliveryCount the largest a queue takes.
const (
	DefaultMaxDeliveryCount = 10
	MaxMaxDeliveryCount     = 2000
)

// loadIngest reads the queue path's settings.
func (c *Handler) loadIngest(getenv func(string) string, readFile func(string) ([]byte, error)) []error {
	var errs []error
	in := Ingest{Alias: cmp.Or(getenv("OFFPATH_INGEST_ALIAS"), "ingest"), MaxDocumentBytes: 100 << 20, HeavyThreshold: 8 << 20,
		MaxDeliveryCount: DefaultMaxDeliveryCount, HeavyMaxDeliveryCount: DefaultMaxDeliveryCount}
	for _, s := range []struct {
		name string
		dst  *int64
	}{{"OFFPATH_INGEST_MAX_BYTES", &in.MaxDocumentBytes}, {"OFFPATH_INGEST_HEAVY_BYTES", &in.HeavyThreshold}} {
		if v := getenv(s.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				errs = append(errs, fmt.Errorf("%s %q: must be a positive number of bytes", s.name, v))
				continue
			}
			*s.dst = n
		}
	}
	for _, s := range []struct {
		name string
		dst  *int
	}{{"OFFPATH_INGEST_CHUNK_TOKENS", &in.ChunkTokens}, {"OFFPATH_INGEST_CHUNK_OVERLAP", &in.ChunkOverlap}} {
		if v := getenv(s.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 8191 {
				errs = append(errs, fmt.Errorf("%s %q: must be a number of tokens within 1..8191", s.name, v))
				continue
			}
			*s.dst = n
		}
	}
	for _, s := range []struct {
		name string
		dst  *int
	}{{"OFFPATH_INGEST_MAX_DELIVERY_COUNT", &in.MaxDeliveryCount}, {"OFFPATH_INGEST_HEAVY_MAX_DELIVERY_COUNT", &in.HeavyMaxDeliveryCount}} {
		if v := getenv(s.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxMaxDeliveryCount {
				errs = append(errs, fmt.Errorf("%s %q: must be a delivery count within 1..%d, the queue's MaxDeliveryCount", s.name, v, MaxMaxDeliveryCount))
				continue
			}
			*s.dst = n
		}
	}
	if c.Storage.ConnectionString == "" && c.Storage.Setting != "" {
		switch uri, account := getenv(c.Storage.Setting+"__blobServiceUri"), getenv(c.Storage.Setting+"__accountName"); {
		case uri != "":
			in.BlobServiceURL = strings.TrimRight(uri, "/")
		case account != "":
			in.BlobServiceURL = "https://" + account + ".blob.core.windows.net"
		default:
			if getenv("OFFPATH_AOAI_ENDPOINT") != "" {
				errs = append(errs, fmt.Errorf("%s__blobServiceUri or __accountName is needed for the documents of the queue path", c.Storage.Setting))
			}
		}
	}

	in.Budget = c.InvocationTimeout
	if host, err := readFile(filepath.Join(c.AppRoot, "host.json")); err == nil {
		var h struct {
			Extensions struct {
				ServiceBus struct {
					MaxAutoLockRenewalDuration string `json:"maxAutoLockRenewalDuration"`
				} `json:"serviceBus"`
			} `json:"extensions"`
		}
		if err := json.Unmarshal(host, &h); err == nil {
			s := cmp.Or(h.Extensions.ServiceBus.MaxAutoLockRenewalDuration, "00:05:00") // the extension's default
			if d, err := ParseTimeSpan(s); err != nil {
				errs = append(errs, fmt.Errorf("host.json extensions.serviceBus.maxAutoLockRenewalDuration: %w", err))
			} else if d > 0 {
				if lock := d - max(d/10, 5*time.Second); lock < in.Budget {
					in.Budget = lock
				}
			}
		}
	}
	if in.Budget <= 0 {
		errs = append(errs, fmt.Errorf("the Service Bus lock renewal leaves no time to process a message"))
	}

	if endpoint := strings.TrimRight(getenv("OFFPATH_AOAI_ENDPOINT"), "/"); endpoint != "" {
		a, aerrs := loadAOAI(getenv, endpoint)
		in.AOAI, errs = a, append(errs, aerrs...)
	}
	c.Ingest = in
	return errs
}

func loadAOAI(getenv func(string) string, endpoint string) (*AOAI, []error) {
	var errs []error
	a := &AOAI{Endpoint: endpoint, APIKey: getenv("OFFPATH_AOAI_API_KEY"), ClientID: getenv("OFFPATH_AOAI_CLIENT_ID"),
		APIVersion: getenv("OFFPATH_AOAI_API_VERSION"), Instances: 1}
	if v := getenv("OFFPATH_AOAI_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 20 {
			errs = append(errs, fmt.Errorf("OFFPATH_AOAI_MAX_ATTEMPTS %q: must be within 1..20", v))
		}
		a.MaxAttempts = n
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"OFFPATH_AOAI_BASE_BACKOFF", &a.BaseBackoff}, {"OFFPATH_AOAI_MAX_BACKOFF", &a.MaxBackoff}} {
		if s := getenv(d.name); s != "" {
			v, err := time.ParseDuration(s)
			if err != nil || v <= 0 {
				errs = append(errs, fmt.Errorf("%s %q: must be a positive duration", d.name, s))
				continue
			}
			*d.dst = v
		}
	}
	if v := getenv("OFFPATH_AOAI_INSTANCES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10_000 {
			errs = append(errs, fmt.Errorf("OFFPATH_AOAI_INSTANCES %q: must be within 1..10000", v))
		} else {
			a.Instances = n
		}
	}
	if v := getenv("OFFPATH_AOAI_LIMITS"); v != "" {
		var quotas map[string]Limit
		if err := json.Unmarshal([]byte(v), &quotas); err != nil {
			errs = append(errs, fmt.Errorf(`OFFPATH_AOAI_LIMITS: want {"deployment": {"tpm": N, "rpm": N}}: %w`, err))
		}
		a.Limits, a.Quotas = map[string]Limit{}, map[string]Limit{}
		for _, name := range slices.Sorted(maps.Keys(quotas)) {
			q := quotas[name]
			if q.TPM < 0 || q.RPM < 0 {
				errs = append(errs, fmt.Errorf("OFFPATH_AOAI_LIMITS %s: negative limit", name))
				continue
			}
			a.Quotas[name] = q
			a.Limits[name] = Limit{TPM: share(q.TPM, a.Instances), RPM: share(q.RPM, a.Instances)}
		}
	}
	a.SharedQuota = true
	if v := getenv("OFFPATH_AOAI_SHARED_QUOTA"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("OFFPATH_AOAI_SHARED_QUOTA %q: must be true or false", v))
		}
		a.SharedQuota = b
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"OFFPATH_AOAI_LEASE_RENEW", &a.LeaseRenew}, {"OFFPATH_AOAI_LEASE_TTL", &a.LeaseTTL}} {
		if s := getenv(d.name); s != "" {
			v, err := time.ParseDuration(s)
			if err != nil || v < time.Second || v > 10*time.Minute {
				errs = append(errs, fmt.Errorf("%s %q: must be a duration within 1s..10m", d.name, s))
				continue
			}
			*d.dst = v
		}
	}
	if renew, ttl := cmp.Or(a.LeaseRenew, 10*time.Second), cmp.Or(a.LeaseTTL, 30*time.Second); ttl <= renew {
		errs = append(errs, fmt.Errorf("OFFPATH_AOAI_LEASE_TTL %v must be longer than OFFPATH_AOAI_LEASE_RENEW %v", ttl, renew))
	}
	for _, s := range []struct {
		name string
		dst  *int64
	}{{"OFFPATH_AOAI_TPM_BUDGET", &a.ChatTPM}, {"OFFPATH_AOAI_RPM_BUDGET", &a.ChatRPM}} {
		if v := getenv(s.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				errs = append(errs, fmt.Errorf("%s %q: must be a number ≥ 0", s.name, v))
				continue
			}
			*s.dst = n
		}
	}
	if a.APIKey == "" && strings.HasPrefix(endpoint, "http://") {
		errs = append(errs, errors.New("OFFPATH_AOAI_API_KEY is needed for a plain-http (local) endpoint"))
	}
	return a, errs
}

// share is a deployment's limit divided among instances, at least 1.
func share(v int64, instances int) int64 {
	if v <= 0 {
		return 0
	}
	return max(v/int64(max(instances, 1)), 1)
}
