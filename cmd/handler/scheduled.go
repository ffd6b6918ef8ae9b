package main

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/invoke"
	"github.com/offpath/offpath/internal/nightly"
	"github.com/offpath/offpath/internal/openaiapi"
)

// runNightly is the nightly-summaries timer function: it collects and
// submits the tickets of the day before the firing (UTC). Firing it again
// for the same day submits nothing twice, so a schedule may fire several
// times a night to ride out a failed run.
func runNightly(b *batchPath) invoke.Func {
	return func(ctx context.Context, req *invoke.Request) (invoke.Result, error) {
		if b == nil {
			zerolog.Ctx(ctx).Warn().Msg("nightly-summaries fired but OFFPATH_AOAI_ENDPOINT is not set: nothing to do")
			return invoke.Result{}, nil
		}
		n, err := b.nightly.Run(ctx, nightly.DayOf(time.Now()))
		if err != nil {
			return invoke.Result{}, err
		}
		zerolog.Ctx(ctx).Info().Str("day", n.Day).Str("job", n.JobID).Int("new", n.Collected.New).Msg("nightly summaries ran")
		return invoke.Result{}, nil
	}
}

// checkReportDeadline is the report-deadline timer function: it alerts when
// the report of the day before the firing (UTC) is not written.
func checkReportDeadline(b *batchPath) invoke.Func {
	return func(ctx context.Context, req *invoke.Request) (invoke.Result, error) {
		if b == nil {
			zerolog.Ctx(ctx).Warn().Msg("report-deadline fired but OFFPATH_AOAI_ENDPOINT is not set: nothing to do")
			return invoke.Result{}, nil
		}
		if _, err := b.nightly.CheckDeadline(ctx, nightly.DayOf(time.Now())); err != nil {
			return invoke.Result{}, err
		}
		return invoke.Result{}, nil
	}
}

// runAudit is the batch-audit timer function: one second-door audit. A run
// that cannot list the resource's batches and files fails (the next
// occurrence tries again); failures of single items are logged and counted.
func runAudit(b *batchPath) invoke.Func {
	return func(ctx context.Context, req *invoke.Request) (invoke.Result, error) {
		if b == nil {
			zerolog.Ctx(ctx).Warn().Msg("batch-audit fired but OFFPATH_AOAI_ENDPOINT is not set: nothing to do")
			return invoke.Result{}, nil
		}
		if _, err := b.audit.Run(ctx); err != nil {
			return invoke.Result{}, err
		}
		return invoke.Result{}, nil
	}
}

// deliverWebhooks is the webhook-deliver timer function: it records the
// events of tenants' ended (or long-held) jobs and delivers the due ones,
// apart from the poll tick. Failed deliveries are retried by later runs;
// only a run that cannot read its stores fails. Then it deletes a bounded
// number of the OpenAI door's expired files; a failed sweep is logged and
// retried by the next run.
func deliverWebhooks(b *batchPath, door *openaiapi.Server) invoke.Func {
	return func(ctx context.Context, req *invoke.Request) (invoke.Result, error) {
		if b == nil {
			zerolog.Ctx(ctx).Warn().Msg("webhook-deliver fired but OFFPATH_AOAI_ENDPOINT is not set: nothing to do")
			return invoke.Result{}, nil
		}
		rep, err := b.webhooks.Run(ctx)
		zerolog.Ctx(ctx).Info().Int("recorded", rep.Recorded).Int("delivered", rep.Delivered).Int("failed", rep.Failed).
			Int("abandoned", rep.Abandoned).Msg("webhooks")
		swept, serr := door.Sweep(ctx, openaiapi.DefaultSweepLimit)
		if serr != nil {
			zerolog.Ctx(ctx).Warn().Err(serr).Int("swept", swept).Msg("expired door files not all deleted")
		} else if swept > 0 {
			zerolog.Ctx(ctx).Info().Int("swept", swept).Msg("expired door files deleted")
		}
		if err != nil {
			return invoke.Result{}, err
		}
		return invoke.Result{}, nil
	}
}
