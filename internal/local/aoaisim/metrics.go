package aoaisim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// The Azure Monitor platform metrics of an Azure OpenAI resource
// (Microsoft.CognitiveServices/accounts) that the simulator serves, from
// the usage it actually reported: REST name, display name, and which
// tokens they count.
const (
	MetricPromptTokens    = "ProcessedPromptTokens" // "Processed Prompt Tokens"
	MetricGeneratedTokens = "GeneratedTokens"       // "Generated Completion Tokens"
	MetricInferenceTokens = "TokenTransaction"      // "Processed Inference Tokens": prompt + completion
)

// MetricsConfig shapes the metrics API.
type MetricsConfig struct {
	// Delay is how long after a minute ends its data point becomes visible
	// (simulated time); Azure's platform metrics arrive minutes late.
	// Default 0.
	Delay Duration `json:"delay,omitempty"`
	// ExcludeGlobalBatch leaves Global Batch deployments' tokens out of the
	// metrics, for a resource whose metrics do not count them. Default
	// false: counted like standard traffic, when each line is answered.
	ExcludeGlobalBatch bool `json:"exclude_global_batch,omitempty"`
}

// tokenMeter keeps the tokens served per deployment and UTC minute.
type tokenMeter struct {
	mu    sync.Mutex
	byDep map[string]map[int64]*[2]int64 // minute (Unix) → prompt, completion
}

func (m *tokenMeter) add(dep string, at time.Time, prompt, completion int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byDep == nil {
		m.byDep = map[string]map[int64]*[2]int64{}
	}
	mins := m.byDep[dep]
	if mins == nil {
		mins = map[int64]*[2]int64{}
		m.byDep[dep] = mins
	}
	k := at.UTC().Truncate(time.Minute).Unix()
	v := mins[k]
	if v == nil {
		v = &[2]int64{}
		mins[k] = v
	}
	v[0] += prompt
	v[1] += completion
}

// sum returns a deployment's tokens in [from, to) of minutes visible by
// visibleBefore.
func (m *tokenMeter) sum(dep string, from, to, visibleBefore time.Time) (prompt, completion int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range m.byDep[dep] {
		t := time.Unix(k, 0)
		if !t.Before(from) && t.Before(to) && !t.Add(time.Minute).After(visibleBefore) {
			prompt += v[0]
			completion += v[1]
		}
	}
	return prompt, completion
}

// meterServed records a model call's usage for the metrics API.
func (s *Server) meterServed(dep *deploymentState, prompt, completion int64) {
	if s.cfg.Metrics.ExcludeGlobalBatch && dep.cfg.Type == TypeGlobalBatch {
		return
	}
	s.meter.add(dep.cfg.Name, s.clock.Now(), prompt, completion)
}

// metricIntervals are the time grains the metrics support.
var metricIntervals = map[string]time.Duration{"PT1M": time.Minute, "PT5M": 5 * time.Minute, "PT15M": 15 * time.Minute,
	"PT30M": 30 * time.Minute, "PT1H": time.Hour, "PT6H": 6 * time.Hour, "PT12H": 12 * time.Hour, "P1D": 24 * time.Hour}

// handleMetrics serves Azure Monitor's "Metrics - List" for the resource:
// GET /{resourceUri}/providers/Microsoft.Insights/metrics?metricnames=&
// timespan=start/end&interval=PT1H&aggregation=Total&$filter=
// ModelDeploymentName eq '*' (or eq 'name'; or no filter: one series). Its
// data are what the simulator served, bucketed by the simulated clock.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	resource, ok := strings.CutSuffix(r.URL.Path, "/providers/Microsoft.Insights/metrics")
	if !ok || !strings.Contains(strings.ToLower(resource), "/providers/microsoft.cognitiveservices/accounts/") {
		writeError(w, errNotFound())
		return
	}
	q := r.URL.Query()
	bad := func(msg string) { writeError(w, newAPIError(http.StatusBadRequest, "BadRequest", msg)) }
	if q.Get("api-version") == "" {
		bad("The api-version query parameter (?api-version=) is required for all requests.")
		return
	}
	now := s.clock.Now().UTC()
	from, to := now.Add(-time.Hour), now
	if ts := q.Get("timespan"); ts != "" {
		a, b, ok := strings.Cut(ts, "/")
		var err1, err2 error
		from, err1 = time.Parse(time.RFC3339, a)
		to, err2 = time.Parse(time.RFC3339, b)
		if !ok || err1 != nil || err2 != nil || !from.Before(to) {
			bad(fmt.Sprintf("Invalid timespan %q: expected startTime/endTime in ISO 8601.", ts))
			return
		}
	}
	grain, interval := time.Hour, cmp.Or(q.Get("interval"), "PT1H")
	if interval == "FULL" {
		grain = to.Sub(from)
	} else if grain, ok = metricIntervals[strings.ToUpper(interval)]; !ok {
		bad(fmt.Sprintf("Invalid interval %q.", interval))
		return
	}
	var deps []string
	split := false
	if f := strings.TrimSpace(q.Get("$filter")); f != "" {
		name, value, ok := parseDimensionFilter(f)
		if !ok || !strings.EqualFold(name, "ModelDeploymentName") {
			bad(fmt.Sprintf("Invalid $filter %q: only ModelDeploymentName eq '<name>' or '*' is supported here.", f))
			return
		}
		split = true
		if value != "*" {
			deps = []string{value}
		}
	}
	if deps == nil {
		for _, d := range s.cfg.Deployments {
			deps = append(deps, d.Name)
		}
	}
	names := strings.Split(cmp.Or(q.Get("metricnames"), MetricPromptTokens), ",")
	visible := now.Add(-s.cfg.Metrics.Delay.D())
	out := metricsResponse{Timespan: from.Format(time.RFC3339) + "/" + to.Format(time.RFC3339), Interval: interval,
		Namespace: "Microsoft.CognitiveServices/accounts", ResourceRegion: "simulated"}
	for _, name := range names {
		pick, display, ok := metricOf(name)
		if !ok {
			bad(fmt.Sprintf("Failed to find metric configuration for provider: Microsoft.CognitiveServices, resource Type: accounts, metric: %s, Valid metrics: %s, %s, %s",
				name, MetricPromptTokens, MetricGeneratedTokens, MetricInferenceTokens))
			return
		}
		m := metricJSON{ID: resource + "/providers/Microsoft.Insights/metrics/" + name, Type: "Microsoft.Insights/metrics",
			Name: localizable{Value: name, LocalizedValue: display}, Unit: "Count", ErrorCode: "Success", TimeSeries: []timeSeries{}}
		series := func(depNames []string) timeSeries {
			ts := timeSeries{Data: []metricPoint{}}
			for t := from; t.Before(to); t = t.Add(grain) {
				end := t.Add(grain)
				if end.After(to) {
					end = to
				}
				var total int64
				for _, d := range depNames {
					p, c := s.meter.sum(d, t, end, visible)
					total += pick(p, c)
				}
				ts.Data = append(ts.Data, metricPoint{TimeStamp: t.Format(time.RFC3339), Total: float64(total)})
			}
			return ts
		}
		if split {
			for _, d := range deps {
				ts := series([]string{d})
				if slices.ContainsFunc(ts.Data, func(p metricPoint) bool { return p.Total != 0 }) {
					ts.MetadataValues = []metadataValue{{Name: localizable{Value: "modeldeploymentname", LocalizedValue: "modeldeploymentname"}, Value: d}}
					m.TimeSeries = append(m.TimeSeries, ts)
				}
			}
		} else {
			m.TimeSeries = append(m.TimeSeries, series(deps))
		}
		out.Value = append(out.Value, m)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(out)
}

// metricOf returns how a metric counts tokens, and its display name.
func metricOf(name string) (func(prompt, completion int64) int64, string, bool) {
	switch {
	case strings.EqualFold(name, MetricPromptTokens):
		return func(p, _ int64) int64 { return p }, "Processed Prompt Tokens", true
	case strings.EqualFold(name, MetricGeneratedTokens):
		return func(_, c int64) int64 { return c }, "Generated Completion Tokens", true
	case strings.EqualFold(name, MetricInferenceTokens):
		return func(p, c int64) int64 { return p + c }, "Processed Inference Tokens", true
	}
	return nil, "", false
}

// parseDimensionFilter reads "Name eq 'value'".
func parseDimensionFilter(f string) (name, value string, ok bool) {
	name, rest, ok := strings.Cut(f, " eq ")
	if !ok {
		return "", "", false
	}
	rest = strings.TrimSpace(rest)
	if len(rest) < 2 || rest[0] != '\'' || rest[len(rest)-1] != '\'' {
		return "", "", false
	}
	return strings.TrimSpace(name), rest[1 : len(rest)-1], true
}

// The wire form of Azure Monitor's metrics response.
type (
	metricsResponse struct {
		Cost           int          `json:"cost"`
		Timespan       string       `json:"timespan"`
		Interval       string       `json:"interval"`
		Value          []metricJSON `json:"value"`
		Namespace      string       `json:"namespace"`
		ResourceRegion string       `json:"resourceregion"`
	}
	metricJSON struct {
		ID         string       `json:"id"`
		Type       string       `json:"type"`
		Name       localizable  `json:"name"`
		Unit       string       `json:"unit"`
		TimeSeries []timeSeries `json:"timeseries"`
		ErrorCode  string       `json:"errorCode"`
	}
	localizable struct {
		Value          string `json:"value"`
		LocalizedValue string `json:"localizedValue"`
	}
	timeSeries struct {
		MetadataValues []metadataValue `json:"metadatavalues,omitempty"`
		Data           []metricPoint   `json:"data"`
	}
	metadataValue struct {
		Name  localizable `json:"name"`
		Value string      `json:"value"`
	}
	metricPoint struct {
		TimeStamp string  `json:"timeStamp"`
		Total     float64 `json:"total"`
	}
)
