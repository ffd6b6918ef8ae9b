package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AOAI is the Azure OpenAI resource: where it is, how the handler
// authenticates, and how the queue path paces its calls. Both paths use it
// when OFFPATH_AOAI_ENDPOINT is set; the reconcile timer reads the
// resource's metrics when OFFPATH_AOAI_RESOURCE_ID is.
type AOAI struct {
	// Endpoint is OFFPATH_AOAI_ENDPOINT, the resource
	// (https://<name>.openai.azure.com; plain http only on loopback, for
	// the simulator); empty: neither path calls Azure OpenAI (the batch
	// endpoints answer 503, queue messages wait in the queue).
	Endpoint string `json:"endpoint,omitempty"`
	// Surface is OFFPATH_AOAI_SURFACE, the batch path's API: "v1"
	// (default) or "classic". APIVersion is OFFPATH_AOAI_API_VERSION: the
	// classic surface's, and the queue path's (empty: package azopenai's GA
	// version).
	Surface    string `json:"surface"`
	APIVersion string `json:"api_version,omitempty"`
	// APIKey is OFFPATH_AOAI_API_KEY (local development; secret); without
	// it the handler uses its managed identity, ClientID
	// (OFFPATH_AOAI_CLIENT_ID) for a user-assigned one. The same identity
	// reads the resource's metrics.
	APIKey   Secret `json:"api_key"`
	ClientID string `json:"client_id,omitempty"`
	// ResourceID is OFFPATH_AOAI_RESOURCE_ID, the resource's ARM id
	// (/subscriptions/…/providers/Microsoft.CognitiveServices/accounts/…),
	// whose token metrics the reconcile timer compares with the ledger.
	ResourceID string `json:"resource_id,omitempty"`

	// MaxAttempts, BaseBackoff and MaxBackoff are the queue path's retries:
	// OFFPATH_AOAI_MAX_ATTEMPTS, OFFPATH_AOAI_BASE_BACKOFF and
	// OFFPATH_AOAI_MAX_BACKOFF (default package azopenai's: 6, 500ms and 8s).
	MaxAttempts int           `json:"max_attempts"`
	BaseBackoff time.Duration `json:"base_backoff"`
	MaxBackoff  time.Duration `json:"max_backoff"`
	// Quotas are the deployments' whole quotas, tokens and requests per
	// minute, from OFFPATH_AOAI_LIMITS (JSON {"deployment": {"tpm": N,
	// "rpm": N}}). With SharedQuota every running instance of both pools
	// shares them through leases in Table Storage (package ratelimit).
	Quotas map[string]Limit `json:"quotas,omitempty"`
	// SharedQuota is OFFPATH_AOAI_SHARED_QUOTA (default true): share the
	// Quotas with the fleet. false: each instance keeps its static share.
	SharedQuota *bool `json:"shared_quota"`
	// LeaseRenew and LeaseTTL are OFFPATH_AOAI_LEASE_RENEW and
	// OFFPATH_AOAI_LEASE_TTL (default package ratelimit's, 10 s and 30 s):
	// how often an instance renews its part of a shared quota, and how long
	// an unrenewed part lasts.
	LeaseRenew time.Duration `json:"lease_renew"`
	LeaseTTL   time.Duration `json:"lease_ttl"`
	// Limits are each deployment's static per-instance share: the limiter's
	// budget when the quota is not shared, and the safe fallback while the
	// lease store cannot be reached when it is. The Quotas divided by
	// Instances; ChatTPM and ChatRPM set the share of the ingestion alias's
	// chat deployment. No limits: no limiter.
	Limits map[string]Limit `json:"limits,omitempty"`
	// Instances is OFFPATH_AOAI_INSTANCES: the most instances that may run
	// (default 1).
	Instances int `json:"instances"`
	// ChatTPM and ChatRPM are OFFPATH_AOAI_TPM_BUDGET and _RPM_BUDGET
	// (already per instance, written by `offpath sizing`), applied to the
	// chat deployment once the catalog is known.
	ChatTPM int64 `json:"chat_tpm_budget,omitempty"`
	ChatRPM int64 `json:"chat_rpm_budget,omitempty"`
}

// Limit is a deployment's tokens and requests per minute.
type Limit struct {
	TPM int64 `json:"tpm"`
	RPM int64 `json:"rpm"`
}

// parseAOAI reads the Azure OpenAI settings; the pacing ones only with an
// endpoint, which is what uses them.
func parseAOAI(getenv func(string) string) (AOAI, []error) {
	var errs []error
	a := AOAI{Endpoint: strings.TrimRight(getenv("OFFPATH_AOAI_ENDPOINT"), "/"), Surface: getenv("OFFPATH_AOAI_SURFACE"),
		APIVersion: getenv("OFFPATH_AOAI_API_VERSION"), APIKey: Secret(getenv("OFFPATH_AOAI_API_KEY")), ClientID: getenv("OFFPATH_AOAI_CLIENT_ID"),
		ResourceID: strings.TrimSpace(getenv("OFFPATH_AOAI_RESOURCE_ID"))}
	if id := a.ResourceID; id != "" && !strings.Contains(strings.ToLower(id), "/providers/microsoft.cognitiveservices/accounts/") {
		errs = append(errs, fmt.Errorf("OFFPATH_AOAI_RESOURCE_ID %q: must be the Azure OpenAI resource's id (…/providers/Microsoft.CognitiveServices/accounts/{name})", id))
	}
	if a.Endpoint == "" {
		return a, errs
	}
	if !httpsURL(a.Endpoint) || strings.TrimRight(urlPath(a.Endpoint), "/") != "" {
		errs = append(errs, fmt.Errorf("OFFPATH_AOAI_ENDPOINT %q: must be the resource's https URL without a path (http only on loopback)", a.Endpoint))
	}
	if a.APIKey == "" && strings.HasPrefix(a.Endpoint, "http://") {
		errs = append(errs, errors.New("OFFPATH_AOAI_API_KEY is needed for a plain-http (local) endpoint"))
	}
	if s := a.Surface; s != "" && s != "v1" && s != "classic" {
		errs = append(errs, fmt.Errorf("OFFPATH_AOAI_SURFACE %q: must be v1 or classic", s))
	}
	if v := getenv("OFFPATH_AOAI_MAX_ATTEMPTS"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 20 {
			errs = append(errs, fmt.Errorf("OFFPATH_AOAI_MAX_ATTEMPTS %q: must be within 1..20", v))
		} else {
			a.MaxAttempts = n
		}
	}
	errs = append(errs, positiveDurations(getenv, map[string]*time.Duration{"OFFPATH_AOAI_BASE_BACKOFF": &a.BaseBackoff, "OFFPATH_AOAI_MAX_BACKOFF": &a.MaxBackoff})...)
	if v := getenv("OFFPATH_AOAI_INSTANCES"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 10_000 {
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
		a.Quotas = map[string]Limit{}
		for _, name := range slices.Sorted(maps.Keys(quotas)) {
			if q := quotas[name]; q.TPM < 0 || q.RPM < 0 {
				errs = append(errs, fmt.Errorf("OFFPATH_AOAI_LIMITS %s: negative limit", name))
			} else {
				a.Quotas[name] = q
			}
		}
	}
	if v := getenv("OFFPATH_AOAI_SHARED_QUOTA"); v != "" {
		if b, err := strconv.ParseBool(v); err != nil {
			errs = append(errs, fmt.Errorf("OFFPATH_AOAI_SHARED_QUOTA %q: must be true or false", v))
		} else {
			a.SharedQuota = &b
		}
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"OFFPATH_AOAI_LEASE_RENEW", &a.LeaseRenew}, {"OFFPATH_AOAI_LEASE_TTL", &a.LeaseTTL}} {
		if s := getenv(d.name); s != "" {
			if v, err := time.ParseDuration(s); err != nil || v < time.Second || v > 10*time.Minute {
				errs = append(errs, fmt.Errorf("%s %q: must be a duration within 1s..10m", d.name, s))
			} else {
				*d.dst = v
			}
		}
	}
	for _, s := range []struct {
		name string
		dst  *int64
	}{{"OFFPATH_AOAI_TPM_BUDGET", &a.ChatTPM}, {"OFFPATH_AOAI_RPM_BUDGET", &a.ChatRPM}} {
		if v := getenv(s.name); v != "" {
			if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
				errs = append(errs, fmt.Errorf("%s %q: must be a number ≥ 0", s.name, v))
			} else {
				*s.dst = n
			}
		}
	}
	return a, errs
}
