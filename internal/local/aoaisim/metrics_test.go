package aoaisim_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/aoaisim"
)

// TestMetrics_Refusals: the metrics API answers a malformed query with
// Azure Monitor's 400, an unknown resource with 404, no key with 401; and
// a well-formed one (with a managed identity token for Azure Resource
// Manager: ARM takes no API key), split by deployment, with only the deployments that
// served something, delayed as configured.
func TestMetrics_Refusals(t *testing.T) {
	t.Parallel()
	s := newSim(t, aoaisim.Config{Metrics: aoaisim.MetricsConfig{Delay: aoaisim.Duration(5 * time.Minute)}})
	if _, err := s.v1.Chat.Completions.New(t.Context(), chatParams(chatDep, "hi")); err != nil {
		t.Fatal(err)
	}
	account := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.CognitiveServices/accounts/a/providers/Microsoft.Insights/metrics"
	from := s.clock.Now().UTC().Truncate(time.Hour)
	span := from.Format(time.RFC3339) + "/" + from.Add(2*time.Hour).Format(time.RFC3339)
	token, _ := s.srv.IssueToken("https://management.azure.com/.default")
	get := func(path string, q url.Values, key bool) (int, map[string]any) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+path+"?"+q.Encode(), nil)
		if key {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(res.Body).Decode(&body)
		return res.StatusCode, body
	}
	good := url.Values{"api-version": {"2024-02-01"}, "metricnames": {aoaisim.MetricPromptTokens}, "timespan": {span},
		"interval": {"PT1H"}, "aggregation": {"Total"}, "$filter": {"ModelDeploymentName eq '*'"}}
	with := func(k, v string) url.Values {
		q := url.Values{}
		for kk, vv := range good {
			q[kk] = vv
		}
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
		return q
	}
	for _, tc := range []struct {
		name string
		path string
		q    url.Values
		key  bool
		want int
	}{
		{"unknown metric", account, with("metricnames", "Tokens"), true, 400},
		{"bad timespan", account, with("timespan", "yesterday"), true, 400},
		{"bad interval", account, with("interval", "PT7M"), true, 400},
		{"bad filter", account, with("$filter", "ModelName eq 'x'"), true, 400},
		{"no api-version", account, with("api-version", ""), true, 400},
		{"not an account", "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/a/providers/Microsoft.Insights/metrics", good, true, 404},
		{"no key", account, good, false, 401},
	} {
		if code, _ := get(tc.path, tc.q, tc.key); code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, code, tc.want)
		}
	}
	_, body := get(account, good, true)
	if series := body["value"].([]any)[0].(map[string]any)["timeseries"].([]any); len(series) != 0 {
		t.Errorf("within the delay: %d series, want none yet", len(series))
	}
	s.clock.Advance(10 * time.Minute)
	_, body = get(account, good, true)
	series := body["value"].([]any)[0].(map[string]any)["timeseries"].([]any)
	if len(series) != 1 {
		t.Fatalf("series %v, want the chat deployment's only", series)
	}
	md := series[0].(map[string]any)["metadatavalues"].([]any)[0].(map[string]any)
	if md["value"] != chatDep || md["name"].(map[string]any)["value"] != "modeldeploymentname" {
		t.Errorf("metadata %v", md)
	}
}
