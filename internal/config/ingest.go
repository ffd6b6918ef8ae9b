package config

import (
	"fmt"
	"strconv"
	"time"
)

// Ingest configures the queue path: the ingest-enqueue and ingest-process
// functions. Its documents and results live in Storage's blobs; its model
// calls go to AOAI (without an endpoint the process functions fail
// transiently, and messages wait in the queue).
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
	// OFFPATH_INGEST_CHUNK_OVERLAP (default package chunk's 512 and 64).
	ChunkTokens  int `json:"chunk_tokens"`
	ChunkOverlap int `json:"chunk_overlap"`
	// MaxDeliveryCount and HeavyMaxDeliveryCount are
	// OFFPATH_INGEST_MAX_DELIVERY_COUNT and
	// OFFPATH_INGEST_HEAVY_MAX_DELIVERY_COUNT (default 10, Azure's): the
	// MaxDeliveryCount of the doc-ingest and doc-ingest-heavy queues, so
	// that the delivery after which Service Bus dead-letters a message
	// records its document as dead-lettered. Keep them equal to the
	// queues' own (the infra sets both).
	MaxDeliveryCount      int `json:"max_delivery_count"`
	HeavyMaxDeliveryCount int `json:"heavy_max_delivery_count"`
	// Budget is how long processing one message may take, waits for 429s
	// and 5xx included: the invocation timeout, or less if host.json's
	// Service Bus maxAutoLockRenewalDuration is shorter than it (less a
	// tenth, at least 5 s), so the host never loses the lock of a message
	// being processed.
	Budget time.Duration `json:"budget"`
}

// parseIngest reads the queue path's settings.
func (c *Handler) parseIngest(getenv func(string) string) []error {
	var errs []error
	in := Ingest{Alias: getenv("OFFPATH_INGEST_ALIAS")}
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
	c.Ingest = in
	return errs
}
