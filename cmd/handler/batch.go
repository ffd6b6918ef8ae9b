package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/audit"
	"github.com/offpath/offpath/internal/azopenai"
	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/blobstore"
	"github.com/offpath/offpath/internal/config"
	"github.com/offpath/offpath/internal/invoke"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/ncrontab"
	"github.com/offpath/offpath/internal/nightly"
	"github.com/offpath/offpath/internal/report"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/webhook"
)

// batchPath is the batch side of the handler: the control plane and the
// scheduled work that goes through it.
type batchPath struct {
	svc     *batch.Service
	nightly *nightly.Service
	audit   *audit.Auditor
	// findings are the audit's records, which the console shows.
	findings *tablestore.Audit
	blobs    *azblob.Client
	webhooks *webhook.Dispatcher
}

// newBatch builds the batch control plane, the nightly summaries and the
// second-door audit from the configuration, or returns nil when they are not configured. It does
// no I/O.
func newBatch(cfg config.Handler, s *services, t tenancy, logger zerolog.Logger) (*batchPath, error) {
	b, a := cfg.Batch, cfg.AOAI
	if b == nil {
		return nil, nil
	}
	ac := azopenai.BatchConfig{Endpoint: a.Endpoint, Surface: azopenai.Surface(a.Surface), APIVersion: a.APIVersion,
		APIKey: a.APIKey.Reveal(), AllowLoopbackHTTP: true}
	if ac.APIKey == "" {
		cred, err := s.credential(a.ClientID)
		if err != nil {
			return nil, fmt.Errorf("azure openai credential: %w", err)
		}
		ac.Credential = cred
	}
	azure, err := azopenai.NewBatchClient(ac, nil, logger)
	if err != nil {
		return nil, err
	}
	blobs, err := s.Blobs()
	if err != nil {
		return nil, err
	}
	tables := t.tables
	store := blobstore.New(blobs, blobstore.Options{BlockSize: batch.BlockSize})
	jobs := tablestore.NewJobs(tables, tablestore.DefaultJobsTable, nil)
	alerts := alert.New(cfg.AlertWebhook.Reveal(), nil, t.alerts)
	var decisions batch.Decisions
	if t.prom != nil {
		decisions = t.prom
	}
	var sync batch.Sync
	if m, err := s.Models(t, logger); err != nil {
		return nil, err
	} else if m != nil {
		sync = m.fallback
	}
	svc, err := batch.New(batch.Options{
		Jobs: jobs, Blobs: store,
		Azure: azure, Ledger: t.ledger, Budgets: ledger.NewBudgets(t.ledger), Catalog: cfg.Catalog,
		Alerts: alerts, Quota: b.Quota, CoolOff: b.CoolOff, CoolOffFailures: b.CoolOffFailures, Decisions: decisions, Sync: sync,
		PollInterval: b.PollInterval, LeaseTTL: b.LeaseTTL, Concurrency: b.Concurrency,
		BackoffBase: b.BackoffBase, HeldAlert: b.HeldAlert, OverdueMargin: b.OverdueMargin, OutputExpiry: azopenai.DefaultOutputExpiry,
		Announcer: webhook.NewAnnouncer(t.webhooks, nil),
		Pack:      batch.PackOptions{MaxItems: b.Pack.MaxItems, MaxTokens: b.Pack.MaxTokens, Window: b.Pack.Window, TargetLines: b.Pack.TargetLines},
	})
	if err != nil {
		return nil, err
	}
	n := cfg.Nightly
	renderer, err := report.New(report.Options{TicketURL: n.TicketURL})
	if err != nil {
		return nil, fmt.Errorf("OFFPATH_TICKETS_URL: %w", err)
	}
	nights, err := nightly.New(nightly.Options{
		Tickets: blobstore.NewContainer(blobs.ServiceClient().NewContainerClient(n.TicketsContainer)), Batches: svc, Tenants: t.tenants,
		Nights: tablestore.NewNights(tables, ""), Summaries: tablestore.NewSummaries(tables, ""),
		Blobs:  blobstore.New(blobs, blobstore.Options{BlockSize: nightly.BlockSize}),
		Ledger: t.ledger, Alerts: alerts, Renderer: renderer, Tenant: n.Tenant, Alias: n.Alias,
		SystemPrompt: n.SystemPrompt, MaxTokens: n.MaxTokens, Reports: n.ReportsContainer,
		ReportDeadline: reportDeadline(n.ReportDeadline), Catalog: cfg.Catalog,
	})
	if err != nil {
		return nil, err
	}
	findings := tablestore.NewAudit(tables, "")
	auditor, err := audit.New(audit.Options{Azure: azure, Active: jobs, Jobs: jobs, Store: findings,
		Ledger: t.ledger, Tenants: t.tenants, Catalog: cfg.Catalog, Alerts: alerts, MinAge: *n.AuditMinAge})
	if err != nil {
		return nil, err
	}
	hooks, err := webhook.New(webhook.Options{Store: t.webhooks, Jobs: svc})
	if err != nil {
		return nil, err
	}
	return &batchPath{svc: svc, nightly: nights, audit: auditor, findings: findings, blobs: blobs, webhooks: hooks}, nil
}

// pollBatches is the batch-poll timer function: one tick of the batch
// control plane, then the morning reports of harvested nights. A tick that cannot even list the active jobs is transient
// (the host logs it and the next occurrence tries again); failures of
// single jobs are logged by the tick and do not fail it.
func pollBatches(b *batchPath) invoke.Func {
	return func(ctx context.Context, req *invoke.Request) (invoke.Result, error) {
		if b == nil {
			zerolog.Ctx(ctx).Warn().Msg("batch-poll fired but OFFPATH_AOAI_ENDPOINT is not set: nothing to do")
			return invoke.Result{}, nil
		}
		if timer, err := req.Timer("timer"); err == nil && timer.IsPastDue {
			zerolog.Ctx(ctx).Info().Msg("batch-poll is past due")
		}
		if _, err := b.svc.Poll(ctx); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return invoke.Result{}, fmt.Errorf("batch poll ran out of time: %w", err)
			}
			return invoke.Result{}, err
		}
		// A harvested nightly job's report is written by the tick that
		// harvested it, or the next.
		if _, err := b.nightly.WriteReports(ctx); err != nil {
			return invoke.Result{}, fmt.Errorf("morning reports: %w", err)
		}
		return invoke.Result{}, nil
	}
}

// reportDeadline is the report deadline timer's next firing after a
// moment, or nil without a schedule.
func reportDeadline(s ncrontab.Schedule) func(time.Time) time.Time {
	if s.IsZero() {
		return nil
	}
	return s.Next
}
