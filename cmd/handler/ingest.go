package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/chunk"
	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/config"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/invoke"
	"github.com/offpath/offpath/internal/ratelimit"
	"github.com/offpath/offpath/internal/tablestore"
)

// registerIngest registers the queue path's functions. When the queue path
// cannot run (no Azure OpenAI endpoint, no ingestion alias in the catalog,
// no blob endpoint) they answer with a transient failure that says why, so
// documents wait in the queue (and eventually the dead-letter queue)
// rather than being lost; the reason is also logged at start-up. Their
// undecodable invocations are rejected before that, like any other's.
//
// The *ratelimit.Fleet it returns (nil when the quota is not shared) must
// run for as long as invocations may call the models; the enqueuer (nil
// when the queue path is off) reprocesses dead-lettered documents.
func registerIngest(mux *invoke.Mux, cfg config.Handler, s *services, t tenancy, logger zerolog.Logger) (*ratelimit.Fleet, *ingest.Enqueuer, error) {
	var enqueue, process, heavy invoke.Func
	enq, proc, fleet, err := newIngest(cfg, s, t, logger)
	switch {
	case errors.Is(err, errIngestOff):
		logger.Warn().Err(err).Msg("the queue path is not configured: the ingest functions fail until it is")
		off := func(context.Context, *invoke.Request) (invoke.Result, error) { return invoke.Result{}, err }
		enqueue, process, heavy = off, off, off
	case err != nil:
		return nil, nil, fmt.Errorf("queue path: %w", err)
	default:
		policy := enq.Rules().Policy()
		enqueue = ingest.EnqueueFunc(enq)
		process = ingest.ProcessFunc(proc, policy.LightQueue)
		heavy = ingest.ProcessFunc(proc, policy.HeavyQueue)
	}
	mux.HandleTrigger(ingest.EnqueueFunction, invoke.BlobTrigger, ingest.BlobBinding, enqueue)             // blob: incoming/{name}
	mux.HandleTrigger(ingest.ProcessFunction, invoke.ServiceBusTrigger, ingest.MessageBinding, process)    // Service Bus: doc-ingest
	mux.HandleTrigger(ingest.ProcessHeavyFunction, invoke.ServiceBusTrigger, ingest.MessageBinding, heavy) // Service Bus: doc-ingest-heavy (AKS)
	return fleet, enq, nil
}

// errIngestOff marks a queue path that is not configured.
var errIngestOff = errors.New("queue path not configured")

// newIngest builds the enqueuer, the processor and the fleet's shared
// quota (nil when not shared). It does no I/O.
func newIngest(cfg config.Handler, s *services, t tenancy, logger zerolog.Logger) (*ingest.Enqueuer, *ingest.Processor, *ratelimit.Fleet, error) {
	in := cfg.Ingest
	if cfg.AOAI.Endpoint == "" {
		return nil, nil, nil, fmt.Errorf("%w: OFFPATH_AOAI_ENDPOINT is not set", errIngestOff)
	}
	alias, ok := cfg.Catalog.Alias(in.Alias)
	if !ok || alias.Queue == nil || alias.Embedding == nil {
		return nil, nil, nil, fmt.Errorf("%w: the model catalog (%s) has no alias %q with a queue and an embedding deployment", errIngestOff, cfg.ModelsSource, in.Alias)
	}
	blobs, err := s.Blobs()
	if err != nil {
		return nil, nil, nil, err
	}
	store := blobstore.NewDocuments(blobs, claimcheck.DefaultContainer, ingest.DefaultResultsContainer, 0)
	rules, err := claimcheck.NewRules(claimcheck.Policy{AccountURL: store.AccountURL(), MaxDocumentBytes: in.MaxDocumentBytes, HeavyThreshold: in.HeavyThreshold})
	if err != nil {
		return nil, nil, nil, err
	}
	tables := t.tables
	var cred azcore.TokenCredential
	if cfg.AOAI.APIKey == "" {
		if cred, err = s.credential(cfg.AOAI.ClientID); err != nil {
			return nil, nil, nil, fmt.Errorf("azure openai credential: %w", err)
		}
	}
	models, limits, fleet, err := newModels(cfg.AOAI, cred, alias.Queue.Name, tablestore.NewRateLimits(tables, ""), logger)
	if err != nil {
		return nil, nil, nil, err
	}
	o := ingest.Options{
		Rules: rules, Catalog: cfg.Catalog, Alias: in.Alias, Tenants: t.tenants,
		Statuses: t.docs, Ledger: t.ledger, Models: models, Blobs: ingest.BlobStore(store),
		Chunk: chunk.Options{Size: in.ChunkTokens, Overlap: in.ChunkOverlap}, Budget: in.Budget,
		MaxDeliveryCount: map[string]int{rules.Policy().LightQueue: in.MaxDeliveryCount, rules.Policy().HeavyQueue: in.HeavyMaxDeliveryCount},
	}
	if t.prom != nil {
		o.Outcomes = t.prom
	}
	enq, err := ingest.NewEnqueuer(o)
	if err != nil {
		return nil, nil, nil, err
	}
	proc, err := ingest.NewProcessor(o)
	if err != nil {
		return nil, nil, nil, err
	}
	logger.Info().Str("alias", in.Alias).Str("chat", alias.Queue.Name).Str("embedding", alias.Embedding.Name).
		Interface("limits", limits).Bool("shared_quota", fleet != nil).Dur("budget_ms", in.Budget).Int64("heavy_threshold", in.HeavyThreshold).
		Int64("max_document_bytes", in.MaxDocumentBytes).Msg("queue path ready")
	return enq, proc, fleet, nil
}

// newModels builds the model client and its per-deployment rate limiter
// (shared by every invocation of this process), and, when the quota is
// shared, the fleet that leases this instance's part of it from leases.
// cred authenticates without an API key. limits are the static
// per-instance shares.
func newModels(a config.AOAI, cred azcore.TokenCredential, chat string, leases ratelimit.LeaseStore, logger zerolog.Logger) (*azopenai.QueueClient, map[string]ratelimit.Limits, *ratelimit.Fleet, error) {
	limits, quotas := map[string]ratelimit.Limits{}, map[string]ratelimit.Limits{}
	for name, l := range a.Limits {
		limits[name] = ratelimit.Limits{TPM: l.TPM, RPM: l.RPM}
	}
	for name, q := range a.Quotas {
		if q.TPM > 0 && q.RPM > 0 {
			quotas[name] = ratelimit.Limits{TPM: q.TPM, RPM: q.RPM}
		}
	}
	if a.ChatTPM > 0 || a.ChatRPM > 0 {
		limits[chat] = ratelimit.Limits{TPM: a.ChatTPM, RPM: a.ChatRPM}
	}
	var limiter azopenai.Limiter
	var fleet *ratelimit.Fleet
	if len(limits) > 0 {
		set, err := ratelimit.NewSet(limits, ratelimit.Options{})
		if err != nil {
			return nil, nil, nil, err
		}
		limiter = set
		if *a.SharedQuota && len(quotas) > 0 {
			fleet, err = ratelimit.NewFleet(set, quotas, limits, leases, ratelimit.FleetOptions{Renew: a.LeaseRenew, TTL: a.LeaseTTL}, logger)
			if err != nil {
				return nil, nil, nil, err
			}
		}
	}
	c := azopenai.QueueConfig{Endpoint: a.Endpoint, APIVersion: a.APIVersion, APIKey: a.APIKey.Reveal(), Credential: cred, AllowHTTP: true,
		MaxAttempts: a.MaxAttempts, BaseBackoff: a.BaseBackoff, MaxBackoff: a.MaxBackoff}
	client, err := azopenai.NewQueueClient(c, limiter, logger)
	return client, limits, fleet, err
}
