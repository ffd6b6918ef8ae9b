package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/config"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/tokenmetrics"
)

// newTokenMetrics builds where the ledger's changes go as token metrics:
// Application Insights, the JSON-lines file, Prometheus' /metrics, any of
// them, or nowhere (nil). prom is the Prometheus endpoint's metrics, if it
// is served, for the queue path's outcomes; its jobs by state are read from
// the job table on tables. stop sends what is queued and closes the file.
func newTokenMetrics(cfg config.Handler, s *services, tables *aztables.ServiceClient, log zerolog.Logger) (m ledger.Metrics, prom *tokenmetrics.Prometheus, stop func(context.Context), err error) {
	tm := cfg.TokenMetrics
	stop = func(context.Context) {}
	if tm == nil {
		return nil, nil, stop, nil
	}
	var sinks tokenmetrics.Multi
	var stops []func(context.Context)
	if tm.File != "" {
		if err := os.MkdirAll(filepath.Dir(tm.File), 0o755); err != nil {
			return nil, nil, stop, fmt.Errorf("token metrics file: %w", err)
		}
		f, err := os.OpenFile(tm.File, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, stop, fmt.Errorf("token metrics file: %w", err)
		}
		sinks = append(sinks, tokenmetrics.NewJSONLines(f, log))
		stops = append(stops, func(context.Context) { f.Close() })
	}
	if tm.PrometheusAddr != "" {
		prom = tokenmetrics.NewPrometheus(tokenmetrics.PrometheusOptions{
			Jobs: tablestore.NewJobs(tables, tablestore.DefaultJobsTable, nil), Log: log})
		mux := http.NewServeMux()
		mux.Handle("/metrics", prom)
		ln, err := net.Listen("tcp", tm.PrometheusAddr)
		if err != nil {
			return nil, nil, stop, fmt.Errorf("OFFPATH_METRICS_ADDR: %w", err)
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		log.Info().Str("addr", ln.Addr().String()).Msg("serving Prometheus metrics on /metrics")
		sinks = append(sinks, prom)
		stops = append(stops, func(ctx context.Context) { _ = srv.Shutdown(ctx) })
	}
	if tm.AppInsights {
		conn, err := tokenmetrics.ParseConnectionString(tm.ConnectionString.Reveal())
		if err != nil {
			return nil, nil, stop, err
		}
		o := tokenmetrics.AppInsightsOptions{Connection: conn, Log: log}
		if tm.Entra {
			if o.Credential, err = s.credential(tm.ClientID); err != nil {
				return nil, nil, stop, fmt.Errorf("APPLICATIONINSIGHTS_AUTHENTICATION_STRING: %w", err)
			}
		}
		a := tokenmetrics.NewAppInsights(o)
		sinks = append(sinks, a)
		stops = append([]func(context.Context){a.Close}, stops...)
	}
	return sinks, prom, func(ctx context.Context) {
		for _, s := range stops {
			s(ctx)
		}
	}, nil
}
