package tokenmetrics

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/ledger"
)

// The names API Management's llm-emit-token-metric policy gives its
// metrics, and its default namespace.
const (
	PromptTokens     = "Prompt Tokens"
	CompletionTokens = "Completion Tokens"
	TotalTokens      = "Total Tokens"
	DefaultNamespace = "API Management"
)

// Dimension names offpath gives its metrics (customDimensions in KQL).
const (
	DimTenant     = "Tenant"
	DimAlias      = "Alias"
	DimDeployment = "Deployment"
	DimPath       = "Path"
	DimSource     = "Source"
	DimUnfinished = "Unfinished"
	// Source's value on offpath's metrics: the gateway's carry its own
	// dimensions and no Source.
	SourceOffpath = "offpath"
)

// EntraScope is the token scope of Application Insights' ingestion.
const EntraScope = "https://monitor.azure.com//.default"

// Connection is what an Application Insights connection string names.
type Connection struct {
	InstrumentationKey string
	// IngestionEndpoint is the regional ingestion endpoint, default
	// https://dc.services.visualstudio.com/.
	IngestionEndpoint string
}

// ParseConnectionString reads "InstrumentationKey=…;IngestionEndpoint=…".
func ParseConnectionString(s string) (Connection, error) {
	var c Connection
	for part := range strings.SplitSeq(s, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch strings.ToLower(k) {
		case "instrumentationkey":
			c.InstrumentationKey = v
		case "ingestionendpoint":
			c.IngestionEndpoint = v
		}
	}
	if c.InstrumentationKey == "" {
		return Connection{}, errors.New("application insights connection string: no InstrumentationKey")
	}
	c.IngestionEndpoint = cmp.Or(c.IngestionEndpoint, "https://dc.services.visualstudio.com/")
	u, err := url.Parse(c.IngestionEndpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return Connection{}, fmt.Errorf("application insights connection string: IngestionEndpoint %q is not a URL", c.IngestionEndpoint)
	}
	return c, nil
}

// AppInsightsOptions configure an AppInsights sink.
type AppInsightsOptions struct {
	Connection Connection
	// Namespace of the metrics (default DefaultNamespace, API Management's).
	Namespace string
	// Role is the cloud role name on the telemetry (default "offpath").
	Role string
	// Credential, when set, authorises each request with an Entra token
	// for Azure Monitor (EntraScope): what a component with local
	// authentication disabled requires.
	Credential azcore.TokenCredential
	Client     *http.Client
	// Buffer is how many samples wait to be sent before new ones are
	// dropped (default 10000); MaxBatch how many go in one request
	// (default 500); Interval how long a sample waits for others (default
	// 5s).
	Buffer, MaxBatch int
	Interval         time.Duration
	Log              zerolog.Logger
}

// AppInsights sends samples to Application Insights' ingestion endpoint
// (POST {IngestionEndpoint}/v2.1/track, one MetricData envelope per
// metric), batched, from a goroutine of its own: Emit never waits on the
// network, and a failed send is logged, never retried into the ledger.
type AppInsights struct {
	o     AppInsightsOptions
	url   string
	queue chan ledger.Sample
	flush chan chan struct{}
	done  chan struct{}
	once  sync.Once
}

// NewAppInsights starts the sender; Close stops it.
func NewAppInsights(o AppInsightsOptions) *AppInsights {
	o.Namespace = cmp.Or(o.Namespace, DefaultNamespace)
	o.Role = cmp.Or(o.Role, "offpath")
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Buffer <= 0 {
		o.Buffer = 10000
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 500
	}
	if o.Interval <= 0 {
		o.Interval = 5 * time.Second
	}
	a := &AppInsights{o: o, url: strings.TrimSuffix(o.Connection.IngestionEndpoint, "/") + "/v2.1/track",
		queue: make(chan ledger.Sample, o.Buffer), flush: make(chan chan struct{}), done: make(chan struct{})}
	go a.run()
	return a
}

// Emit queues the samples; when the buffer is full they are dropped and
// logged.
func (a *AppInsights) Emit(_ context.Context, samples []ledger.Sample) {
	for i, s := range samples {
		select {
		case a.queue <- s:
		default:
			a.o.Log.Warn().Int("dropped", len(samples)-i).Msg("token metrics buffer full: samples dropped")
			return
		}
	}
}

// Flush sends every sample queued before it, or returns when ctx ends.
func (a *AppInsights) Flush(ctx context.Context) {
	ack := make(chan struct{})
	select {
	case a.flush <- ack:
	case <-a.done:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-ack:
	case <-ctx.Done():
	}
}

// Close sends what is queued and stops the sender.
func (a *AppInsights) Close(ctx context.Context) {
	a.Flush(ctx)
	a.once.Do(func() { close(a.done) })
}

func (a *AppInsights) run() {
	tick := time.NewTicker(a.o.Interval)
	defer tick.Stop()
	var pending []ledger.Sample
	send := func() {
		for len(pending) > 0 {
			n := min(len(pending), a.o.MaxBatch)
			if err := a.send(pending[:n]); err != nil {
				a.o.Log.Warn().Err(err).Int("samples", n).Msg("token metrics not sent to Application Insights")
			}
			pending = pending[n:]
		}
		pending = nil
	}
	drain := func() {
		for {
			select {
			case s := <-a.queue:
				pending = append(pending, s)
			default:
				return
			}
		}
	}
	for {
		select {
		case s := <-a.queue:
			pending = append(pending, s)
			if len(pending) >= a.o.MaxBatch {
				send()
			}
		case <-tick.C:
			send()
		case ack := <-a.flush:
			drain()
			send()
			close(ack)
		case <-a.done:
			return
		}
	}
}

// Envelope is the ingestion API's telemetry item, as far as MetricData
// uses it.
type Envelope struct {
	Name string            `json:"name"`
	Time string            `json:"time"`
	IKey string            `json:"iKey"`
	Tags map[string]string `json:"tags,omitempty"`
	Data struct {
		BaseType string     `json:"baseType"`
		BaseData MetricData `json:"baseData"`
	} `json:"data"`
}

// MetricData is one metric with its dimensions (properties).
type MetricData struct {
	Ver        int               `json:"ver"`
	Metrics    []DataPoint       `json:"metrics"`
	Properties map[string]string `json:"properties,omitempty"`
}

// DataPoint is one metric value; Kind 0 is a measurement.
type DataPoint struct {
	Namespace string  `json:"ns,omitempty"`
	Name      string  `json:"name"`
	Kind      int     `json:"kind"`
	Value     float64 `json:"value"`
	Count     int     `json:"count"`
}

// Envelopes are a sample's three metrics, as API Management sends them.
func (a *AppInsights) Envelopes(s ledger.Sample) []Envelope {
	props := map[string]string{DimTenant: s.Tenant, DimAlias: s.Alias, DimDeployment: s.Deployment,
		DimPath: string(s.Path), DimSource: SourceOffpath}
	if s.Unfinished {
		props[DimUnfinished] = "true"
	}
	name := "Microsoft.ApplicationInsights." + strings.ReplaceAll(strings.ToLower(a.o.Connection.InstrumentationKey), "-", "") + ".Metric"
	var out []Envelope
	for _, m := range []struct {
		name string
		v    int64
	}{{PromptTokens, s.PromptTokens}, {CompletionTokens, s.CompletionTokens}, {TotalTokens, s.TotalTokens}} {
		var e Envelope
		e.Name, e.Time, e.IKey = name, s.Time.UTC().Format(time.RFC3339Nano), a.o.Connection.InstrumentationKey
		e.Tags = map[string]string{"ai.cloud.role": a.o.Role}
		e.Data.BaseType = "MetricData"
		e.Data.BaseData = MetricData{Ver: 2, Properties: props,
			Metrics: []DataPoint{{Namespace: a.o.Namespace, Name: m.name, Value: float64(m.v), Count: 1}}}
		out = append(out, e)
	}
	return out
}

func (a *AppInsights) send(samples []ledger.Sample) error {
	var body bytes.Buffer
	enc := json.NewEncoder(&body) // one envelope per line: the endpoint takes newline-delimited JSON
	for _, s := range samples {
		for _, e := range a.Envelopes(s) {
			if err := enc.Encode(&e); err != nil {
				return fmt.Errorf("encode token metric: %w", err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, &body)
	if err != nil {
		return fmt.Errorf("token metrics request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-json-stream")
	if a.o.Credential != nil {
		tok, err := a.o.Credential.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{EntraScope}})
		if err != nil {
			return fmt.Errorf("token for Application Insights: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+tok.Token)
	}
	resp, err := a.o.Client.Do(req)
	if err != nil {
		return fmt.Errorf("post token metrics: %w", err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("post token metrics: %s: %s", resp.Status, bytes.TrimSpace(reply))
	}
	// 200 can still reject some items: {"itemsReceived":n,"itemsAccepted":m,"errors":[…]}.
	var r struct {
		Received int `json:"itemsReceived"`
		Accepted int `json:"itemsAccepted"`
	}
	if json.Unmarshal(reply, &r) == nil && r.Accepted < r.Received {
		return fmt.Errorf("post token metrics: %d of %d items accepted: %s", r.Accepted, r.Received, bytes.TrimSpace(reply))
	}
	return nil
}
