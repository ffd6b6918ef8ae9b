package tablestore

import (
	"context"
	"encoding/json"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/offpath/offpath/internal/ledger"
)

// WriteRowOnly writes e's ledger row and not the rollups it moves: what a
// version that kept no rollups wrote, and what a writer that wrote a row
// and its rollups apart would leave when it died between the two.
func (l *Ledger) WriteRowOnly(ctx context.Context, e ledger.Entry) error {
	if err := l.t.ensure(ctx); err != nil {
		return err
	}
	e.Recorded = l.now()
	b, err := json.Marshal(toLedgerEntity(e))
	if err != nil {
		return err
	}
	_, err = l.t.client.UpsertEntity(ctx, b, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
	return err
}

// WriteRowsOnly writes entries' rows as they are (Recorded included), a
// transaction of 100 at a time, without their rollups: the fast way to
// lay down a large month for a benchmark, whose rollups Rebuild then
// computes. All entries are of one tenant-month, with distinct units.
func (l *Ledger) WriteRowsOnly(ctx context.Context, entries []ledger.Entry) error {
	if err := l.t.ensure(ctx); err != nil {
		return err
	}
	for start := 0; start < len(entries); start += MaxTransaction {
		var actions []aztables.TransactionAction
		for _, e := range entries[start:min(start+MaxTransaction, len(entries))] {
			b, err := json.Marshal(toLedgerEntity(e))
			if err != nil {
				return err
			}
			actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: b})
		}
		if _, err := l.t.client.SubmitTransaction(ctx, actions, nil); err != nil {
			return err
		}
	}
	return nil
}

// WriteRollups writes a tenant-month's rollups as they are, a transaction
// of 100 at a time: for a benchmark month too large for Rebuild to scan
// on Azurite, whose rollups it computes from the entries it laid down
// (ledger.Roll).
func (l *Ledger) WriteRollups(ctx context.Context, tenantID string, m ledger.Month, rollups map[ledger.RollupKey]ledger.Rollup) error {
	pk := Partition(tenantID, m)
	var actions []aztables.TransactionAction
	for _, r := range rollups {
		b, err := json.Marshal(toRollupEntity(pk, r))
		if err != nil {
			return err
		}
		actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: b})
	}
	for start := 0; start < len(actions); start += MaxTransaction {
		if _, err := l.t.client.SubmitTransaction(ctx, actions[start:min(start+MaxTransaction, len(actions))], nil); err != nil {
			return err
		}
	}
	return nil
}

// EmptyRange runs a query of the rollup read's shape (the month's
// partition, a range of row keys) over a range that holds no row, and
// returns how many it found: what any query costs the store whatever it
// returns.
func (l *Ledger) EmptyRange(ctx context.Context, tenantID string, m ledger.Month) (int, error) {
	filter := "PartitionKey eq " + quote(Partition(tenantID, m)) + " and RowKey ge '~v|' and RowKey lt '~v}'"
	pager := l.t.client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
	n := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return n, err
		}
		n += len(page.Entities)
	}
	return n, nil
}
