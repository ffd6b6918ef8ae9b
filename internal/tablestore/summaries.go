package tablestore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/nightly"
	"github.com/offpath/offpath/internal/tickets"
)

// DefaultSummariesTable records which version of each ticket was last
// submitted for summary:
//
//	PartitionKey "<tenant id>", RowKey "<ticket id>"   Hash, Job
//
// Ticket ids ([A-Za-z0-9][A-Za-z0-9._-]*, package tickets) are valid row
// keys as they are.
const DefaultSummariesTable = "offpathsummaries"

// Summaries stores the summaries record.
type Summaries struct{ t table }

// NewSummaries returns the store on the named table (empty:
// DefaultSummariesTable).
func NewSummaries(svc *aztables.ServiceClient, tableName string) *Summaries {
	return &Summaries{t: table{client: svc.NewClient(cmp.Or(tableName, DefaultSummariesTable))}}
}

type summaryEntity struct {
	PartitionKey string
	RowKey       string
	Hash         string
	Job          string `json:",omitempty"`
}

// Load reads a tenant's whole record (one partition query, only the ids
// and hashes) into memory, for one collection.
func (s *Summaries) Load(ctx context.Context, tenantID string) (*tickets.Memory, error) {
	filter := "PartitionKey eq " + quote(tenantID)
	sel := "RowKey,Hash"
	pager := s.t.client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter, Select: &sel})
	m := tickets.NewMemory()
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			if isNotFound(err) {
				return m, nil
			}
			return nil, fmt.Errorf("load the summaries of %s: %w", tenantID, err)
		}
		for _, b := range page.Entities {
			var e summaryEntity
			if err := json.Unmarshal(b, &e); err != nil {
				return nil, fmt.Errorf("decode a summary record: %w", err)
			}
			m.Record(e.RowKey, e.Hash)
		}
	}
	return m, nil
}

// Record writes the hashes of tickets submitted by job: one transaction per
// 100 tickets, a few at once. Writing the same tickets again is harmless.
func (s *Summaries) Record(ctx context.Context, tenantID, jobID string, submitted []nightly.Submitted) error {
	if len(submitted) == 0 {
		return nil
	}
	if err := s.t.ensure(ctx); err != nil {
		return err
	}
	// A transaction may not touch one row twice: the last hash wins.
	last := make(map[string]int, len(submitted))
	for i, sub := range submitted {
		last[sub.ID] = i
	}
	var chunks [][]aztables.TransactionAction
	var cur []aztables.TransactionAction
	for i, sub := range submitted {
		if last[sub.ID] != i {
			continue
		}
		b, err := json.Marshal(summaryEntity{PartitionKey: tenantID, RowKey: sub.ID, Hash: sub.Hash, Job: jobID})
		if err != nil {
			return fmt.Errorf("encode summary record: %w", err)
		}
		cur = append(cur, aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: b})
		if len(cur) == MaxTransaction {
			chunks, cur = append(chunks, cur), nil
		}
	}
	if len(cur) > 0 {
		chunks = append(chunks, cur)
	}
	errs := make([]error, len(chunks))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, actions := range chunks {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := s.t.client.SubmitTransaction(ctx, actions, nil); err != nil {
				errs[i] = fmt.Errorf("record %d summaries of %s: %w", len(actions), tenantID, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
