package tablestore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/offpath/offpath/internal/ledger"
)

// previous reads the tokens a row holds before it is rewritten: the zero
// Usage when there is no row. Only a Ledger with Metrics reads them.
func (l *Ledger) previous(ctx context.Context, e *ledger.Entry) (ledger.Usage, error) {
	res, err := l.t.client.GetEntity(ctx, Partition(e.Tenant, e.Month), e.Key(), nil)
	if isNotFound(err) {
		return ledger.Usage{}, nil
	}
	if err != nil {
		return ledger.Usage{}, fmt.Errorf("read ledger entry %s %s: %w", Partition(e.Tenant, e.Month), e.Key(), err)
	}
	var row ledgerEntity
	if err := json.Unmarshal(res.Value, &row); err != nil {
		return ledger.Usage{}, fmt.Errorf("decode ledger entry %s %s: %w", Partition(e.Tenant, e.Month), e.Key(), err)
	}
	return row.usage(), nil
}

// delta is the sample of writing e, read against its row before the
// write; ok is false without Metrics or when the write adds no tokens.
func (l *Ledger) delta(ctx context.Context, e *ledger.Entry) (s ledger.Sample, ok bool, err error) {
	if l.metrics == nil {
		return ledger.Sample{}, false, nil
	}
	prev, err := l.previous(ctx, e)
	if err != nil {
		return ledger.Sample{}, false, err
	}
	s, ok = ledger.Delta(prev, e, l.now())
	return s, ok, nil
}

func (l *Ledger) emit(ctx context.Context, samples []ledger.Sample) {
	if l.metrics != nil && len(samples) > 0 {
		l.metrics.Emit(ctx, samples)
	}
}
