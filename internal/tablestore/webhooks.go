package tablestore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/webhook"
)

// DefaultWebhooksTable holds tenants' webhook endpoints and their events:
//
//	PartitionKey "endpoint", RowKey "<tenant id>"   the tenant's endpoint (URL, signing secret)
//	PartitionKey "<tenant id>", RowKey "<event id>" one event, its payload and attempts
//
// An event's Pending and NextAttempt mirror its document, so that the due
// events are one filtered query.
const DefaultWebhooksTable = "offpathwebhooks"

const endpointPartition = "endpoint"

// Webhooks stores webhook endpoints and events.
type Webhooks struct{ t table }

// NewWebhooks returns the store on the named table (empty:
// DefaultWebhooksTable).
func NewWebhooks(svc *aztables.ServiceClient, tableName string) *Webhooks {
	return &Webhooks{t: table{client: svc.NewClient(cmp.Or(tableName, DefaultWebhooksTable))}}
}

type endpointDoc struct {
	URL     string    `json:"url"`
	Secret  string    `json:"secret"`
	Created time.Time `json:"created"`
}

// PutEndpoint creates or replaces a tenant's endpoint.
func (s *Webhooks) PutEndpoint(ctx context.Context, ep webhook.Endpoint) error {
	if err := s.t.ensure(ctx); err != nil {
		return err
	}
	doc, err := json.Marshal(endpointDoc{URL: ep.URL, Secret: ep.Secret, Created: ep.Created.UTC()})
	if err != nil {
		return err
	}
	row, err := json.Marshal(map[string]any{"PartitionKey": endpointPartition, "RowKey": ep.Tenant, "Doc": string(doc)})
	if err != nil {
		return err
	}
	if _, err := s.t.client.UpsertEntity(ctx, row, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
		return fmt.Errorf("store webhook of %s: %w", ep.Tenant, err)
	}
	return nil
}

// Endpoint returns a tenant's endpoint, or webhook.ErrNotFound.
func (s *Webhooks) Endpoint(ctx context.Context, tenantID string) (webhook.Endpoint, error) {
	res, err := s.t.client.GetEntity(ctx, endpointPartition, tenantID, nil)
	if err != nil {
		if isNotFound(err) {
			return webhook.Endpoint{}, fmt.Errorf("tenant %s: %w", tenantID, webhook.ErrNotFound)
		}
		return webhook.Endpoint{}, fmt.Errorf("read webhook of %s: %w", tenantID, err)
	}
	return decodeEndpoint(res.Value)
}

func decodeEndpoint(b []byte) (webhook.Endpoint, error) {
	var e struct{ RowKey, Doc string }
	if err := json.Unmarshal(b, &e); err != nil {
		return webhook.Endpoint{}, fmt.Errorf("decode webhook: %w", err)
	}
	var d endpointDoc
	if err := json.Unmarshal([]byte(e.Doc), &d); err != nil {
		return webhook.Endpoint{}, fmt.Errorf("decode webhook of %s: %w", e.RowKey, err)
	}
	return webhook.Endpoint{Tenant: e.RowKey, URL: d.URL, Secret: d.Secret, Created: d.Created}, nil
}

// DeleteEndpoint removes a tenant's endpoint (its events stay, for the
// record); one that does not exist is webhook.ErrNotFound.
func (s *Webhooks) DeleteEndpoint(ctx context.Context, tenantID string) error {
	if _, err := s.t.client.DeleteEntity(ctx, endpointPartition, tenantID, nil); err != nil {
		if isNotFound(err) {
			return fmt.Errorf("tenant %s: %w", tenantID, webhook.ErrNotFound)
		}
		return fmt.Errorf("delete webhook of %s: %w", tenantID, err)
	}
	return nil
}

// Endpoints returns every endpoint.
func (s *Webhooks) Endpoints(ctx context.Context) ([]webhook.Endpoint, error) {
	filter := fmt.Sprintf("PartitionKey eq %s", quote(endpointPartition))
	var out []webhook.Endpoint
	err := s.list(ctx, filter, func(b []byte, _ azcore.ETag) error {
		ep, err := decodeEndpoint(b)
		out = append(out, ep)
		return err
	})
	return out, err
}

type eventDoc struct {
	Type        string            `json:"type"`
	Job         string            `json:"job"`
	Payload     json.RawMessage   `json:"payload"`
	Created     time.Time         `json:"created"`
	Delivered   bool              `json:"delivered,omitempty"`
	Abandoned   bool              `json:"abandoned,omitempty"`
	NextAttempt time.Time         `json:"next_attempt"`
	Attempts    []webhook.Attempt `json:"attempts,omitempty"`
}

func eventRow(e webhook.Event) ([]byte, error) {
	doc, err := json.Marshal(eventDoc{Type: e.Type, Job: e.Job, Payload: e.Payload, Created: e.Created, Delivered: e.Delivered,
		Abandoned: e.Abandoned, NextAttempt: e.NextAttempt.UTC(), Attempts: e.Attempts})
	if err != nil {
		return nil, fmt.Errorf("encode webhook event %s: %w", e.ID, err)
	}
	return json.Marshal(map[string]any{"PartitionKey": e.Tenant, "RowKey": e.ID, "Doc": string(doc),
		"Pending": !e.Delivered && !e.Abandoned, "NextAttempt": e.NextAttempt.UTC(), "NextAttempt@odata.type": edmDateTime})
}

func decodeEvent(b []byte, etag azcore.ETag) (webhook.Event, error) {
	var e struct{ PartitionKey, RowKey, Doc string }
	if err := json.Unmarshal(b, &e); err != nil {
		return webhook.Event{}, fmt.Errorf("decode webhook event: %w", err)
	}
	var d eventDoc
	if err := json.Unmarshal([]byte(e.Doc), &d); err != nil {
		return webhook.Event{}, fmt.Errorf("decode webhook event %s: %w", e.RowKey, err)
	}
	return webhook.Event{Tenant: e.PartitionKey, ID: e.RowKey, Type: d.Type, Job: d.Job, Payload: d.Payload, Created: d.Created,
		Delivered: d.Delivered, Abandoned: d.Abandoned, NextAttempt: d.NextAttempt, Attempts: d.Attempts, ETag: string(etag)}, nil
}

// AddEvent records e unless the tenant has an event of its id.
func (s *Webhooks) AddEvent(ctx context.Context, e webhook.Event) error {
	if err := s.t.ensure(ctx); err != nil {
		return err
	}
	row, err := eventRow(e)
	if err != nil {
		return err
	}
	if _, err := s.t.client.AddEntity(ctx, row, nil); err != nil {
		var re *azcore.ResponseError
		if hasCode(err, aztables.EntityAlreadyExists) || (errors.As(err, &re) && re.StatusCode == http.StatusConflict) {
			return nil
		}
		return fmt.Errorf("record webhook event %s: %w", e.ID, err)
	}
	return nil
}

// UpdateEvent replaces an event if its ETag still matches, else
// webhook.ErrConflict.
func (s *Webhooks) UpdateEvent(ctx context.Context, e webhook.Event) (webhook.Event, error) {
	row, err := eventRow(e)
	if err != nil {
		return webhook.Event{}, err
	}
	version, stale, err := s.t.replace(ctx, row, e.ETag)
	switch {
	case stale:
		return webhook.Event{}, fmt.Errorf("webhook event %s: %w", e.ID, webhook.ErrConflict)
	case err != nil:
		return webhook.Event{}, fmt.Errorf("update webhook event %s: %w", e.ID, err)
	}
	e.ETag = version
	return e, nil
}

// Due returns the pending events whose next attempt is at or before now.
func (s *Webhooks) Due(ctx context.Context, now time.Time) ([]webhook.Event, error) {
	filter := fmt.Sprintf("Pending eq true and NextAttempt le datetime'%s'", now.UTC().Format(time.RFC3339Nano))
	return s.events(ctx, filter)
}

// Events returns a tenant's events, attempts included.
func (s *Webhooks) Events(ctx context.Context, tenantID string) ([]webhook.Event, error) {
	return s.events(ctx, fmt.Sprintf("PartitionKey eq %s", quote(tenantID)))
}

func (s *Webhooks) events(ctx context.Context, filter string) ([]webhook.Event, error) {
	var out []webhook.Event
	err := s.list(ctx, filter, func(b []byte, etag azcore.ETag) error {
		e, err := decodeEvent(b, etag)
		out = append(out, e)
		return err
	})
	return out, err
}

func (s *Webhooks) list(ctx context.Context, filter string, each func([]byte, azcore.ETag) error) error {
	for b, err := range s.t.entities(ctx, &aztables.ListEntitiesOptions{Filter: &filter}) {
		if err != nil {
			return fmt.Errorf("list webhooks: %w", err)
		}
		var meta struct {
			ETag azcore.ETag `json:"odata.etag"`
		}
		_ = json.Unmarshal(b, &meta)
		if err := each(b, meta.ETag); err != nil {
			return err
		}
	}
	return nil
}
