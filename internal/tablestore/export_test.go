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
