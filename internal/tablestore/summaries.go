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
)

// DefaultSummariesTable records which version of each ticket was last
// submitted for summary:
//
//	PartitionKey "<tenant id>", RowKey "<ticket id>"   Hash, Job
//
// Ticket ids ([A-Za-z0-9][A-Za-z0-9._-]*, package tickets) are valid row
// keys as they are.
const DefaultSummariesTable = "offpathsummaries"

// Summaries stores the summaries record. It grows with every ticket ever
// summarised, so it is only ever read by point reads.
type Summaries struct{ t table }

// lookupParallel bounds the point reads of one Lookup in flight.
const lookupParallel = 16

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

// Lookup returns the recorded hash of each of ids that has one: point
// reads, lookupParallel at a time (one partition query would read every
// ticket ever summarised).
func (s *Summaries) Lookup(ctx context.Context, tenantID string, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	var mu sync.Mutex
	errs := make([]error, len(ids))
	sem := make(chan struct{}, lookupParallel)
	var wg sync.WaitGroup
	for i, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res, err := s.t.client.GetEntity(ctx, tenantID, id, nil)
			if err != nil {
				if !isNotFound(err) {
					errs[i] = fmt.Errorf("look up the summary of %s: %w", id, err)
				}
				return
			}
			var e summaryEntity
			if err := json.Unmarshal(res.Value, &e); err != nil {
				errs[i] = fmt.Errorf("decode the summary of %s: %w", id, err)
				return
			}
			mu.Lock()
			out[id] = e.Hash
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
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
