// Package monitor is offpath's adapter to Azure Monitor's metrics of the
// Azure OpenAI resource, over the Azure SDK's azquery metrics client: it
// reads the tokens Azure itself counted, per deployment, for the
// reconciliation (package reconcile).
//
// The metrics are the resource's platform metrics (namespace
// Microsoft.CognitiveServices/accounts): ProcessedPromptTokens ("Processed
// Prompt Tokens") and GeneratedTokens ("Generated Completion Tokens"),
// aggregation Total, split by the dimension ModelDeploymentName. Reading
// them needs the Monitoring Reader role on the resource.
package monitor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/monitor/azquery"

	"github.com/offpath/offpath/internal/reconcile"
)

// The metrics read, by their REST names.
const (
	PromptTokens    = "ProcessedPromptTokens"
	GeneratedTokens = "GeneratedTokens"
	// DeploymentDimension splits the metrics per deployment.
	DeploymentDimension = "ModelDeploymentName"
)

// Config says where the metrics are.
type Config struct {
	// ResourceID is the Azure OpenAI resource:
	// /subscriptions/{id}/resourceGroups/{group}/providers/Microsoft.CognitiveServices/accounts/{name}.
	ResourceID string
	// Endpoint is Azure Resource Manager's (default the public cloud's,
	// https://management.azure.com); Audience its token audience (default
	// the endpoint).
	Endpoint, Audience string
	// ClientOptions are the SDK's (transport, retries).
	ClientOptions azcore.ClientOptions
}

// Client reads the resource's token metrics.
type Client struct {
	c        *azquery.MetricsClient
	resource string
}

// New returns a Client authenticating with cred (the managed identity in
// Azure).
func New(cred azcore.TokenCredential, cfg Config) (*Client, error) {
	if !strings.Contains(strings.ToLower(cfg.ResourceID), "/providers/microsoft.cognitiveservices/accounts/") {
		return nil, fmt.Errorf("monitor: resource id %q is not an Azure OpenAI (Cognitive Services) account", cfg.ResourceID)
	}
	opts := azquery.MetricsClientOptions{ClientOptions: cfg.ClientOptions}
	if cfg.Endpoint != "" {
		opts.Cloud = cloud.Configuration{Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			azquery.ServiceNameMetrics: {Endpoint: cfg.Endpoint, Audience: cmp.Or(cfg.Audience, cfg.Endpoint)}}}
		if aad := cfg.ClientOptions.Cloud.ActiveDirectoryAuthorityHost; aad != "" {
			opts.Cloud.ActiveDirectoryAuthorityHost = aad
		}
	}
	c, err := azquery.NewMetricsClient(cred, &opts)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	return &Client{c: c, resource: strings.TrimPrefix(cfg.ResourceID, "/")}, nil
}

// Tokens returns the tokens Azure counted per deployment in [from, until),
// summed over the time grains of the span.
func (c *Client) Tokens(ctx context.Context, from, until time.Time) (map[string]reconcile.Tokens, error) {
	res, err := c.c.QueryResource(ctx, c.resource, &azquery.MetricsClientQueryResourceOptions{
		Timespan:    to.Ptr(azquery.NewTimeInterval(from.UTC(), until.UTC())),
		Interval:    to.Ptr(Grain(from, until)),
		MetricNames: to.Ptr(PromptTokens + "," + GeneratedTokens),
		Aggregation: []*azquery.AggregationType{to.Ptr(azquery.AggregationTypeTotal)},
		Filter:      to.Ptr(DeploymentDimension + " eq '*'"),
		Top:         to.Ptr(int32(1000)),
	})
	if err != nil {
		return nil, fmt.Errorf("query token metrics: %w", err)
	}
	out := map[string]reconcile.Tokens{}
	for _, m := range res.Value {
		if m == nil || m.Name == nil || m.Name.Value == nil {
			continue
		}
		if m.ErrorCode != nil && *m.ErrorCode != "" && *m.ErrorCode != "Success" {
			return nil, fmt.Errorf("query token metrics: %s: %s", *m.Name.Value, deref(m.ErrorMessage))
		}
		for _, ts := range m.TimeSeries {
			dep := deployment(ts)
			if dep == "" {
				return nil, errors.New("query token metrics: a series without its deployment")
			}
			var sum float64
			for _, p := range ts.Data {
				if p != nil && p.Total != nil {
					sum += *p.Total
				}
			}
			t := out[dep]
			switch {
			case strings.EqualFold(*m.Name.Value, PromptTokens):
				t.Prompt += int64(sum)
			case strings.EqualFold(*m.Name.Value, GeneratedTokens):
				t.Completion += int64(sum)
			}
			out[dep] = t
		}
	}
	return out, nil
}

// grains are Azure Monitor's time grains, longest first.
var grains = []struct {
	d    time.Duration
	name string
}{{24 * time.Hour, "P1D"}, {12 * time.Hour, "PT12H"}, {6 * time.Hour, "PT6H"}, {time.Hour, "PT1H"},
	{30 * time.Minute, "PT30M"}, {15 * time.Minute, "PT15M"}, {5 * time.Minute, "PT5M"}, {time.Minute, "PT1M"}}

// Grain is the longest time grain whose buckets tile [from, until)
// exactly, so that no bucket reaches outside the span: Azure Monitor
// aligns its buckets to the grain. PT1M if none does.
func Grain(from, until time.Time) string {
	span, offset := until.Sub(from), from.UTC().Sub(from.UTC().Truncate(24*time.Hour))
	for _, g := range grains {
		if span >= g.d && span%g.d == 0 && offset%g.d == 0 {
			return g.name
		}
	}
	return "PT1M"
}

// deployment is a series' ModelDeploymentName (Azure answers dimension
// names in lower case).
func deployment(ts *azquery.TimeSeriesElement) string {
	for _, md := range ts.MetadataValues {
		if md != nil && md.Name != nil && md.Name.Value != nil && strings.EqualFold(*md.Name.Value, DeploymentDimension) {
			return deref(md.Value)
		}
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
