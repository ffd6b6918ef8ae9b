package config_test

import (
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func hostJSON(body string) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		if body == "" {
			return nil, fs.ErrNotExist
		}
		return []byte(body), nil
	}
}

func TestLoadHandler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		host    string
		want    config.Handler
		wantErr string
	}{
		{
			name: "defaults from host.json",
			env:  map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "40123", "FUNCTIONS_APP_ROOT_PATH": "/home/site/wwwroot"},
			host: `{"functionTimeout": "00:10:00"}`,
			want: config.Handler{Port: 40123, AppRoot: "/home/site/wwwroot", FunctionTimeout: 10 * time.Minute, InvocationTimeout: 9 * time.Minute, LogLevel: zerolog.InfoLevel},
		},
		{
			name: "legacy port variable, short timeout keeps 5 s margin",
			env:  map[string]string{"FUNCTIONS_HTTPWORKER_PORT": "9000"},
			host: `{"functionTimeout": "00:00:30"}`,
			want: config.Handler{Port: 9000, AppRoot: ".", FunctionTimeout: 30 * time.Second, InvocationTimeout: 25 * time.Second, LogLevel: zerolog.InfoLevel},
		},
		{
			name: "unbounded",
			env:  map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "OFFPATH_LOG_LEVEL": "DEBUG"},
			host: `{"functionTimeout": "-1"}`,
			want: config.Handler{Port: 1, AppRoot: ".", InvocationTimeout: 30 * time.Minute, LogLevel: zerolog.DebugLevel},
		},
		{name: "no port", env: map[string]string{}, host: `{}`, wantErr: "FUNCTIONS_CUSTOMHANDLER_PORT is not set"},
		{name: "bad port", env: map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "http"}, host: `{}`, wantErr: `"http" is not a port number`},
		{name: "no host.json", env: map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1"}, wantErr: "read host.json"},
		{name: "bad timeout", env: map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1"}, host: `{"functionTimeout": "10m"}`, wantErr: "functionTimeout"},
		{name: "override above timeout", env: map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "OFFPATH_INVOCATION_TIMEOUT": "20m"}, host: `{"functionTimeout": "00:10:00"}`, wantErr: "below functionTimeout"},
		{name: "bad level", env: map[string]string{"FUNCTIONS_CUSTOMHANDLER_PORT": "1", "OFFPATH_LOG_LEVEL": "loud"}, host: `{}`, wantErr: "OFFPATH_LOG_LEVEL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := config.LoadHandler(env(tt.env), hostJSON(tt.host))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadHandler() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadHandler() error = %v", err)
			}
			if got != tt.want {
				t.Errorf("LoadHandler() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseTimeSpan(t *testing.T) {
	t.Parallel()
	good := map[string]time.Duration{"00:05:00": 5 * time.Minute, "1.02:00:00": 26 * time.Hour, "00:00:00.5": 500 * time.Millisecond, "-1": 0, "": 0}
	for in, want := range good {
		if got, err := config.ParseTimeSpan(in); err != nil || got != want {
			t.Errorf("ParseTimeSpan(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"5m", "00:61:00", "aa:00:00", "00:00:00", "1:2"} {
		if _, err := config.ParseTimeSpan(in); err == nil {
			t.Errorf("ParseTimeSpan(%q): no error", in)
		}
	}
}
