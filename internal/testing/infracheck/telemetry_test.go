package infracheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// hostLogging is host.json's "logging" section, as far as Application
// Insights is concerned.
type hostLogging struct {
	LogLevel            map[string]string `json:"logLevel"`
	ApplicationInsights *struct {
		SamplingSettings *struct {
			IsEnabled     *bool  `json:"isEnabled"`
			ExcludedTypes string `json:"excludedTypes"`
			IncludedTypes string `json:"includedTypes"`
		} `json:"samplingSettings"`
	} `json:"applicationInsights"`
}

// logLevels in the order of Microsoft.Extensions.Logging.
var logLevels = []string{"trace", "debug", "information", "warning", "error", "critical", "none"}

// level returns the minimum level logged for category, by the longest
// logLevel key that prefixes it ("default" otherwise; Information when
// nothing is set), as ASP.NET Core's filter rules pick it.
func (l hostLogging) level(category string) string {
	best, level := -1, "information"
	for k, v := range l.LogLevel {
		if k == "default" {
			if best < 0 {
				level = strings.ToLower(v)
			}
			continue
		}
		if (category == k || strings.HasPrefix(category, k+".")) && len(k) > best {
			best, level = len(k), strings.ToLower(v)
		}
	}
	return level
}

// checkTelemetry: the lines the alert rules read (alert lines and the
// morning_report_written event) are traces, logged at Information level
// (the strings of an invocation reply's Logs, category
// Function.<name>.User) or from the handler's stdout (host logs). Both must
// pass the log filter, and Application Insights' adaptive sampling (on by
// default) must never drop a trace: sampling off, or Trace among the
// excluded types. Settings that override host.json's logging, where the
// host runs, would make host.json's word moot, so there must be none.
func checkTelemetry(hostJSON []byte, functions []string, hosts []functionHost) error {
	var doc struct {
		Logging hostLogging `json:"logging"`
	}
	if err := json.Unmarshal(hostJSON, &doc); err != nil {
		return fmt.Errorf("host.json: %w", err)
	}
	var errs []error
	l := doc.Logging
	info := slices.Index(logLevels, "information")
	for _, fn := range functions {
		cat := "Function." + fn + ".User"
		if lv := l.level(cat); slices.Index(logLevels, lv) > info {
			errs = append(errs, fmt.Errorf("host.json logging.logLevel drops %s at Information (level %s): the reply's Logs, alert lines included, never reach Application Insights", cat, lv))
		}
	}
	for _, cat := range []string{"Host.Function.Console", "Worker"} {
		if lv := l.level(cat); slices.Index(logLevels, lv) > info {
			errs = append(errs, fmt.Errorf("host.json logging.logLevel drops %s at Information (level %s): the handler's stdout lines never reach Application Insights", cat, lv))
		}
	}
	sampled := true
	if ai := l.ApplicationInsights; ai != nil && ai.SamplingSettings != nil {
		s := ai.SamplingSettings
		switch {
		case s.IsEnabled != nil && !*s.IsEnabled:
			sampled = false
		case typeListed(s.ExcludedTypes, "Trace"):
			sampled = false
		}
		if s.IncludedTypes != "" && !typeListed(s.IncludedTypes, "Trace") && sampled {
			sampled = false // only the included types are sampled
		}
	}
	if sampled {
		errs = append(errs, errors.New(`host.json: Application Insights samples traces (sampling is on by default): alert lines and morning_report_written may be dropped; set logging.applicationInsights.samplingSettings.excludedTypes to include "Trace" (or isEnabled false)`))
	}
	for _, h := range hosts {
		for _, k := range sortedKeys(h.settings) {
			if strings.HasPrefix(strings.ToLower(k), "azurefunctionsjobhost__logging__") {
				errs = append(errs, fmt.Errorf("%s sets %s: it overrides host.json's logging, which the alert rules depend on", h.name, k))
			}
		}
	}
	return errors.Join(errs...)
}

// typeListed reports whether a semicolon-separated telemetry type list
// (as samplingSettings takes it) names typ.
func typeListed(list, typ string) bool {
	for _, t := range strings.Split(list, ";") {
		if strings.EqualFold(strings.TrimSpace(t), typ) {
			return true
		}
	}
	return false
}

func TestHostJSON_TracesNeverSampledOrFiltered(t *testing.T) {
	t.Parallel()
	fns, err := loadFunctions(funcsDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fn := range fns {
		names = append(names, fn.name)
	}
	appSettings, err := bicepSettings(string(readFile(t, infraDir+"/modules/functionapp.bicep")))
	if err != nil {
		t.Fatal(err)
	}
	worker, _ := workerEnv(t)
	hosts := []functionHost{{name: functionAppHost, settings: appSettings}, {name: workerHost, settings: worker}}
	if err := checkTelemetry(readFile(t, hostJSON), names, hosts); err != nil {
		t.Error(err)
	}
}

func TestHostJSON_BrokenTelemetryFails(t *testing.T) {
	t.Parallel()
	fns := []string{"batch-poll"}
	good := `{"logging":{"logLevel":{"default":"Information"},"applicationInsights":{"samplingSettings":{"isEnabled":true,"excludedTypes":"Request;Exception;Trace"}}}}`
	if err := checkTelemetry([]byte(good), fns, nil); err != nil {
		t.Errorf("checkTelemetry(good) = %v", err)
	}
	if err := checkTelemetry([]byte(`{"logging":{"applicationInsights":{"samplingSettings":{"isEnabled":false}}}}`), fns, nil); err != nil {
		t.Errorf("checkTelemetry(sampling off) = %v", err)
	}
	tests := []struct {
		name, hostJSON string
		hosts          []functionHost
		want           string
	}{
		{"no sampling settings", `{"logging":{"logLevel":{"default":"Information"}}}`, nil, "samples traces"},
		{"requests only excluded", `{"logging":{"applicationInsights":{"samplingSettings":{"isEnabled":true,"excludedTypes":"Request"}}}}`, nil, "samples traces"},
		{"traces included in sampling", `{"logging":{"applicationInsights":{"samplingSettings":{"includedTypes":"Trace;Request"}}}}`, nil, "samples traces"},
		{"default warning", `{"logging":{"logLevel":{"default":"Warning"},"applicationInsights":{"samplingSettings":{"isEnabled":false}}}}`, nil,
			"drops Function.batch-poll.User at Information"},
		{"function category error", `{"logging":{"logLevel":{"Function":"Error"},"applicationInsights":{"samplingSettings":{"isEnabled":false}}}}`, nil,
			"drops Function.batch-poll.User"},
		{"console off", `{"logging":{"logLevel":{"Host.Function.Console":"None"},"applicationInsights":{"samplingSettings":{"isEnabled":false}}}}`, nil,
			"drops Host.Function.Console"},
		{"setting overrides", good, []functionHost{{name: "app", settings: map[string]string{"AzureFunctionsJobHost__logging__applicationInsights__samplingSettings__excludedTypes": "Request"}}},
			"overrides host.json's logging"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := checkTelemetry([]byte(tt.hostJSON), fns, tt.hosts); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("checkTelemetry = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// A more specific category wins over a broader one.
	l := hostLogging{LogLevel: map[string]string{"default": "Warning", "Function": "Information"}}
	if got := l.level("Function.batch-poll.User"); got != "information" {
		t.Errorf("level(Function.batch-poll.User) = %s, want information", got)
	}
}
