package main

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/alert"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/config"
	"github.com/offpath/offpath/internal/invoke"
	"github.com/offpath/offpath/internal/monitor"
	"github.com/offpath/offpath/internal/reconcile"
	"github.com/offpath/offpath/internal/tablestore"
)

// newReconciler builds the reconciliation against Azure Monitor, or
// returns nil when OFFPATH_AOAI_RESOURCE_ID is not set. It does no I/O.
func newReconciler(cfg config.Handler, s *services, t tenancy) (*reconcile.Reconciler, error) {
	r := cfg.Reconcile
	if r == nil {
		return nil, nil
	}
	cred, err := s.credential(cfg.AOAI.ClientID)
	if err != nil {
		return nil, fmt.Errorf("azure monitor credential: %w", err)
	}
	metrics, err := monitor.New(cred, monitor.Config{ResourceID: cfg.AOAI.ResourceID, Endpoint: r.MonitorEndpoint})
	if err != nil {
		return nil, err
	}
	var batchDeps []string
	for d, p := range cfg.Catalog.Deployments() {
		if p == catalog.Batch {
			batchDeps = append(batchDeps, d)
		}
	}
	tables := t.tables
	return reconcile.New(reconcile.Options{Metrics: metrics, Ledger: t.ledger, Tenants: t.tenants, Alerts: alert.New(cfg.AlertWebhook.Reveal(), nil, t.alerts),
		Watermark:        tablestore.NewWatermark(tables, "", "reconcile"),
		BatchDeployments: batchDeps, Batch: r.GlobalBatch, Period: r.Period, Settle: r.Settle, Tolerance: r.Tolerance, MinTokens: r.MinTokens})
}

// runReconcile is the reconcile timer function: every hour that became
// final since the last run (the watermark's), compared with Azure's meter.
// A failure to read the ledger or the metrics fails the invocation; the
// next run starts again at the hour that failed.
func runReconcile(r *reconcile.Reconciler) invoke.Func {
	return func(ctx context.Context, req *invoke.Request) (invoke.Result, error) {
		if r == nil {
			zerolog.Ctx(ctx).Warn().Msg("reconcile fired but OFFPATH_AOAI_RESOURCE_ID is not set: nothing to do")
			return invoke.Result{}, nil
		}
		if _, err := r.Run(ctx); err != nil {
			return invoke.Result{}, err
		}
		return invoke.Result{}, nil
	}
}
