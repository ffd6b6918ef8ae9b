package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/chunk"
	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/config"
	"github.com/offpath/offpath/internal/ingest"
	"github.com/offpath/offpath/internal/invoke"
	"github.com/offpath/offpath/internal/ratelimit"
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
	m, err := s.Models(t, logger)
	if err != nil {
		return nil, nil, nil, err
	}
	models, limits, fleet := m.client, m.limits, m.fleet
	o := ingest.Options{
		Rules: rules, Catalog: cfg.Catalog, Alias: in.Alias, Tenants: t.tenants,
		Statuses: t.docs, Ledger: t.ledger, Models: models, Blobs: store,
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
