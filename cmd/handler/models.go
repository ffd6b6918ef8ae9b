package main

import (
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/config"
	"github.com/offpath/offpath/internal/ratelimit"
	"github.com/offpath/offpath/internal/tablestore"
)

// models are the process's clients of the Azure OpenAI deployments the
// queue path calls: one per-deployment rate limiter shared by every
// invocation, the queue path's client on it, and the batch deadline
// fallback's client on a ratelimit.Capped of it (a quarter of each
// deployment's budget at most, so ingestion keeps the rest).
type models struct {
	client   *azopenai.QueueClient
	fallback *azopenai.QueueClient
	// limits are the static per-instance shares; fleet, when the quota is
	// shared, leases this instance's part of it.
	limits map[string]ratelimit.Limits
	fleet  *ratelimit.Fleet
}

// Models builds the models once (nil, with no error, when Azure OpenAI is
// not configured). The queue path's chat deployment is its alias's.
func (s *services) Models(t tenancy, logger zerolog.Logger) (*models, error) {
	if s.models != nil || s.cfg.AOAI.Endpoint == "" {
		return s.models, nil
	}
	var chat string
	if a, ok := s.cfg.Catalog.Alias(s.cfg.Ingest.Alias); ok && a.Queue != nil {
		chat = a.Queue.Name
	}
	var cred azcore.TokenCredential
	if s.cfg.AOAI.APIKey == "" {
		var err error
		if cred, err = s.credential(s.cfg.AOAI.ClientID); err != nil {
			return nil, fmt.Errorf("azure openai credential: %w", err)
		}
	}
	m, err := newModels(s.cfg.AOAI, cred, chat, tablestore.NewRateLimits(t.tables, ""), logger)
	if err != nil {
		return nil, err
	}
	s.models = m
	s.built["models"]++
	return m, nil
}

// newModels builds the models on a. cred authenticates without an API
// key; chat, if set, is the deployment a's chat limits apply to.
func newModels(a config.AOAI, cred azcore.TokenCredential, chat string, leases ratelimit.LeaseStore, logger zerolog.Logger) (*models, error) {
	limits, quotas := map[string]ratelimit.Limits{}, map[string]ratelimit.Limits{}
	for name, l := range a.Limits {
		limits[name] = ratelimit.Limits{TPM: l.TPM, RPM: l.RPM}
	}
	for name, q := range a.Quotas {
		if q.TPM > 0 && q.RPM > 0 {
			quotas[name] = ratelimit.Limits{TPM: q.TPM, RPM: q.RPM}
		}
	}
	if chat != "" && (a.ChatTPM > 0 || a.ChatRPM > 0) {
		limits[chat] = ratelimit.Limits{TPM: a.ChatTPM, RPM: a.ChatRPM}
	}
	m := &models{limits: limits}
	var limiter, capped azopenai.Limiter
	if len(limits) > 0 {
		set, err := ratelimit.NewSet(limits, ratelimit.Options{})
		if err != nil {
			return nil, err
		}
		c, err := ratelimit.NewCapped(set, ratelimit.DefaultCappedFraction, ratelimit.Options{})
		if err != nil {
			return nil, err
		}
		limiter, capped = set, c
		if *a.SharedQuota && len(quotas) > 0 {
			m.fleet, err = ratelimit.NewFleet(set, quotas, limits, leases, ratelimit.FleetOptions{Renew: a.LeaseRenew, TTL: a.LeaseTTL}, logger)
			if err != nil {
				return nil, err
			}
		}
	}
	c := azopenai.QueueConfig{Endpoint: a.Endpoint, APIVersion: a.APIVersion, APIKey: a.APIKey.Reveal(), Credential: cred, AllowHTTP: true,
		MaxAttempts: a.MaxAttempts, BaseBackoff: a.BaseBackoff, MaxBackoff: a.MaxBackoff}
	var err error
	if m.client, err = azopenai.NewQueueClient(c, limiter, logger); err != nil {
		return nil, err
	}
	if m.fallback, err = azopenai.NewQueueClient(c, capped, logger.With().Str("use", "deadline_fallback").Logger()); err != nil {
		return nil, err
	}
	return m, nil
}
