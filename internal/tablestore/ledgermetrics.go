package tablestore

import (
	"context"

	"github.com/offpath/offpath/internal/ledger"
)

func (l *Ledger) emit(ctx context.Context, samples []ledger.Sample) {
	if l.metrics != nil && len(samples) > 0 {
		l.metrics.Emit(ctx, samples)
	}
}
