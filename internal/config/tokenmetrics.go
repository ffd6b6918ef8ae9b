package config

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/offpath/offpath/internal/tokenmetrics"
)

// TokenMetrics says where every ledger change is also sent as token
// metrics; nil when nowhere.
type TokenMetrics struct {
	// ConnectionString is APPLICATIONINSIGHTS_CONNECTION_STRING, the
	// Functions host's own setting: metrics go to that component. It
	// locates the component and is secret: never logged, printed redacted.
	ConnectionString Secret `json:"connection_string"`
	AppInsights      bool   `json:"app_insights"`
	// Entra is set when APPLICATIONINSIGHTS_AUTHENTICATION_STRING says
	// "Authorization=AAD" (the component refuses instrumentation keys);
	// ClientID is its ClientId, a user-assigned identity (empty: the
	// system-assigned one).
	Entra    bool   `json:"entra,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	// File is OFFPATH_TOKEN_METRICS_FILE: JSON lines appended there (the
	// dev stack's .run/metrics.jsonl), with or without Application
	// Insights.
	File string `json:"file,omitempty"`
	// PrometheusAddr is OFFPATH_METRICS_ADDR: where the handler serves
	// /metrics in Prometheus' text format (host:port, e.g. ":9464" on the
	// AKS workers, for clusters that scrape).
	PrometheusAddr string `json:"prometheus_addr,omitempty"`
}

func (c *Handler) parseTokenMetrics(getenv func(string) string) []error {
	m := &TokenMetrics{ConnectionString: Secret(strings.TrimSpace(getenv("APPLICATIONINSIGHTS_CONNECTION_STRING"))),
		File: strings.TrimSpace(getenv("OFFPATH_TOKEN_METRICS_FILE")), PrometheusAddr: strings.TrimSpace(getenv("OFFPATH_METRICS_ADDR"))}
	m.AppInsights = m.ConnectionString != ""
	if m.ConnectionString == "" && m.File == "" && m.PrometheusAddr == "" {
		return nil
	}
	var errs []error
	for part := range strings.SplitSeq(getenv("APPLICATIONINSIGHTS_AUTHENTICATION_STRING"), ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch strings.ToLower(k) {
		case "authorization":
			if !strings.EqualFold(v, "AAD") {
				errs = append(errs, fmt.Errorf("APPLICATIONINSIGHTS_AUTHENTICATION_STRING: Authorization=%q, want AAD", v))
			}
			m.Entra = true
		case "clientid":
			m.ClientID = v
		}
	}
	if m.AppInsights {
		if _, err := tokenmetrics.ParseConnectionString(m.ConnectionString.Reveal()); err != nil {
			errs = append(errs, fmt.Errorf("APPLICATIONINSIGHTS_CONNECTION_STRING: %w", err))
		}
	}
	if m.File != "" && !filepath.IsAbs(m.File) {
		errs = append(errs, fmt.Errorf("OFFPATH_TOKEN_METRICS_FILE %q: must be an absolute path", m.File))
	}
	if m.PrometheusAddr != "" {
		if _, port, err := net.SplitHostPort(m.PrometheusAddr); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("OFFPATH_METRICS_ADDR %q: want host:port, e.g. :9464", m.PrometheusAddr))
		}
	}
	c.TokenMetrics = m
	return errs
}
