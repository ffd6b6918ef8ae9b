package devhost

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/config"
)

// App is an app folder as the Functions host reads it: host.json, one folder
// per function with its function.json, and (locally) local.settings.json.
type App struct {
	Root      string
	Host      HostConfig
	Functions []*Function
	// Settings are local.settings.json's Values, passed to the handler as
	// environment variables (app settings), as Core Tools does.
	Settings map[string]string
	// HTTPPort is local.settings.json's Host.LocalHttpPort (default 7071).
	HTTPPort int
	// StorageExtension is the Storage extension whose blob trigger the dev
	// host imitates: the StorageExtensionSetting app setting, default 5.x.
	StorageExtension StorageExtension
	// MaxRequestBody is the largest HTTP request body the host takes: the
	// FUNCTIONS_REQUEST_BODY_SIZE_LIMIT app setting, in bytes, default
	// 100 MB; a larger one is answered 413 before any function runs.
	MaxRequestBody int64

	getenv func(string) string
}

// RequestBodyLimitSetting is the app setting with which the Functions host
// raises or lowers its request body limit.
const RequestBodyLimitSetting = "FUNCTIONS_REQUEST_BODY_SIZE_LIMIT"

// defaultMaxRequestBody is the host's request body limit without it.
const defaultMaxRequestBody = 100 << 20

// parseBodyLimit reads RequestBodyLimitSetting: empty is the default.
func parseBodyLimit(v string) (int64, error) {
	if v = strings.TrimSpace(v); v == "" {
		return defaultMaxRequestBody, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s %q: want a positive number of bytes", RequestBodyLimitSetting, v)
	}
	return n, nil
}

// HostConfig is the part of host.json the dev host honours.
type HostConfig struct {
	Executable          string   // customHandler.description.defaultExecutablePath
	WorkingDirectory    string   // customHandler.description.workingDirectory
	Arguments           []string // customHandler.description.arguments
	Forwarding          bool     // customHandler.enableForwardingHttpRequest
	FunctionTimeout     time.Duration
	RoutePrefix         string // extensions.http.routePrefix, default "api"
	MaxConcurrentCalls  int    // extensions.serviceBus.maxConcurrentCalls, default 16
	MaxAutoLockRenewal  time.Duration
	PoisonBlobThreshold int
}

// Function is one function folder.
type Function struct {
	Name     string
	Bindings []Binding
	disabled bool
}

// Binding is one entry of function.json's bindings; Raw keeps every property
// for the binding-specific code.
type Binding struct {
	Type      string `json:"type"`
	Direction string `json:"direction"`
	Name      string `json:"name"`
	DataType  string `json:"dataType"`
	// Trigger and binding properties the dev host uses.
	Schedule     string   `json:"schedule"`
	RunOnStartup bool     `json:"runOnStartup"`
	UseMonitor   *bool    `json:"useMonitor"`
	Path         string   `json:"path"`
	QueueName    string   `json:"queueName"`
	Connection   string   `json:"connection"`
	Source       string   `json:"source"`
	AuthLevel    string   `json:"authLevel"`
	Methods      []string `json:"methods"`
	Route        string   `json:"route"`
	Properties   struct {
		SupportsDeferredBinding bool `json:"supportsDeferredBinding"`
	} `json:"properties"`
}

// Trigger returns the function's trigger binding.
func (f *Function) Trigger() Binding {
	for _, b := range f.Bindings {
		if strings.HasSuffix(strings.ToLower(b.Type), "trigger") {
			return b
		}
	}
	return Binding{}
}

// Outputs returns the function's output bindings.
func (f *Function) Outputs() []Binding {
	var out []Binding
	for _, b := range f.Bindings {
		if b.Direction == "out" {
			out = append(out, b)
		}
	}
	return out
}

// forwarded reports whether the host forwards this HTTP function's raw
// request: forwarding is on and the function is exactly one httpTrigger in
// and one http out (with any other binding the host sends an envelope).
func (f *Function) forwarded(h HostConfig) bool {
	if !h.Forwarding || len(f.Bindings) != 2 {
		return false
	}
	in, out := f.Bindings[0], f.Bindings[1]
	if in.Direction == "out" {
		in, out = out, in
	}
	return strings.EqualFold(in.Type, "httpTrigger") && strings.EqualFold(out.Type, "http")
}

// supported reports whether the dev host serves a binding type in a
// direction; anything else stops it with a clear message rather than
// silently ignoring a binding.
func supported(direction, typ string) bool {
	types := []string{"http", "serviceBus", "blob", "queue"}
	if direction == "in" {
		types = []string{"httpTrigger", "timerTrigger", "blobTrigger", "serviceBusTrigger"}
	}
	return slices.ContainsFunc(types, func(t string) bool { return strings.EqualFold(t, typ) })
}

// validFunctionName is what the host accepts as a function folder name.
func validFunctionName(name string) bool {
	if name == "" || len(name) > 128 || !isLetter(name[0]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isLetter(c) && (c < '0' || c > '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// LoadApp reads the app folder at root, validating what the dev host serves.
// getenv supplies settings that local.settings.json does not.
func LoadApp(root string, getenv func(string) string) (*App, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("app folder: %w", err)
	}
	app := &App{Root: root, Settings: map[string]string{}, HTTPPort: 7071, getenv: getenv}
	if err := app.loadHost(filepath.Join(root, "host.json")); err != nil {
		return nil, err
	}
	if err := app.loadSettings(filepath.Join(root, "local.settings.json")); err != nil {
		return nil, err
	}
	if app.StorageExtension, err = ParseStorageExtension(app.setting(StorageExtensionSetting)); err != nil {
		return nil, err
	}
	if app.MaxRequestBody, err = parseBodyLimit(app.setting(RequestBodyLimitSetting)); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("read app folder: %w", err)
	}
	var errs []error
	for _, e := range entries {
		path := filepath.Join(root, e.Name(), "function.json")
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			continue
		}
		f, err := loadFunction(e.Name(), path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if f.disabled || app.disabled(f.Name) {
			continue
		}
		app.Functions = append(app.Functions, f)
	}
	if len(app.Functions) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("no function folders (with function.json) in %s", root))
	}
	return app, errors.Join(errs...)
}

func (a *App) loadHost(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read host.json: %w", err)
	}
	var h struct {
		CustomHandler *struct {
			Description *struct {
				DefaultExecutablePath string   `json:"defaultExecutablePath"`
				WorkingDirectory      string   `json:"workingDirectory"`
				Arguments             []string `json:"arguments"`
			} `json:"description"`
			EnableForwardingHTTPRequest bool `json:"enableForwardingHttpRequest"`
		} `json:"customHandler"`
		FunctionTimeout string `json:"functionTimeout"`
		Extensions      struct {
			HTTP *struct {
				RoutePrefix *string `json:"routePrefix"`
			} `json:"http"`
			ServiceBus struct {
				MaxConcurrentCalls         int    `json:"maxConcurrentCalls"`
				MaxAutoLockRenewalDuration string `json:"maxAutoLockRenewalDuration"`
			} `json:"serviceBus"`
			Blobs struct {
				PoisonBlobThreshold int `json:"poisonBlobThreshold"`
			} `json:"blobs"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("host.json: %w", err)
	}
	if h.CustomHandler == nil || h.CustomHandler.Description == nil || h.CustomHandler.Description.DefaultExecutablePath == "" {
		return errors.New("host.json: customHandler.description.defaultExecutablePath is required (custom-handler mode is chosen by its presence)")
	}
	d := h.CustomHandler.Description
	a.Host = HostConfig{
		Executable:          d.DefaultExecutablePath,
		WorkingDirectory:    d.WorkingDirectory,
		Arguments:           d.Arguments,
		Forwarding:          h.CustomHandler.EnableForwardingHTTPRequest,
		RoutePrefix:         "api",
		MaxConcurrentCalls:  cmp.Or(h.Extensions.ServiceBus.MaxConcurrentCalls, 16),
		MaxAutoLockRenewal:  5 * time.Minute,
		PoisonBlobThreshold: cmp.Or(h.Extensions.Blobs.PoisonBlobThreshold, 5),
	}
	if h.Extensions.HTTP != nil && h.Extensions.HTTP.RoutePrefix != nil {
		a.Host.RoutePrefix = strings.Trim(*h.Extensions.HTTP.RoutePrefix, "/")
	}
	if a.Host.FunctionTimeout, err = config.ParseTimeSpan(h.FunctionTimeout); err != nil {
		return fmt.Errorf("host.json functionTimeout: %w", err)
	}
	if s := h.Extensions.ServiceBus.MaxAutoLockRenewalDuration; s != "" {
		if a.Host.MaxAutoLockRenewal, err = config.ParseTimeSpan(s); err != nil {
			return fmt.Errorf("host.json extensions.serviceBus.maxAutoLockRenewalDuration: %w", err)
		}
	}
	return nil
}

func (a *App) loadSettings(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read local.settings.json: %w", err)
	}
	var s struct {
		Values map[string]string `json:"Values"`
		Host   struct {
			LocalHTTPPort int `json:"LocalHttpPort"`
		} `json:"Host"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("local.settings.json: %w", err)
	}
	for k, v := range s.Values {
		a.Settings[k] = v
	}
	a.HTTPPort = cmp.Or(s.Host.LocalHTTPPort, a.HTTPPort)
	return nil
}

// disabled applies the host's switches: AzureWebJobs.<name>.Disabled, and
// AzureFunctionsJobHost__functions__N, which restricts the host to a list
// (how the AKS deployment runs only the heavy-ingestion function).
func (a *App) disabled(name string) bool {
	if v := a.setting("AzureWebJobs." + name + ".Disabled"); strings.EqualFold(v, "true") || v == "1" {
		return true
	}
	var only []string
	for i := 0; ; i++ {
		v := a.setting(fmt.Sprintf("AzureFunctionsJobHost__functions__%d", i))
		if v == "" {
			break
		}
		only = append(only, v)
	}
	return len(only) > 0 && !slices.Contains(only, name)
}

// setting returns an app setting: local.settings.json first, then the
// process environment, as Core Tools resolves them.
func (a *App) setting(key string) string {
	if v, ok := a.Settings[key]; ok {
		return v
	}
	return a.getenv(key)
}

func loadFunction(name, path string) (*Function, error) {
	if !validFunctionName(name) {
		return nil, fmt.Errorf("function folder %q: not a valid function name", name)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", name, err)
	}
	var fj struct {
		Disabled bool      `json:"disabled"`
		Bindings []Binding `json:"bindings"`
	}
	if err := json.Unmarshal(b, &fj); err != nil {
		return nil, fmt.Errorf("function %s: function.json: %w", name, err)
	}
	f := &Function{Name: name, Bindings: fj.Bindings, disabled: fj.Disabled}
	triggers := 0
	for i, bd := range f.Bindings {
		if bd.Name == "" {
			return nil, fmt.Errorf("function %s: binding %d has no name", name, i)
		}
		if !supported(bd.Direction, bd.Type) {
			return nil, fmt.Errorf("function %s: binding %q: type %q with direction %q is not served by the dev host", name, bd.Name, bd.Type, bd.Direction)
		}
		if strings.HasSuffix(strings.ToLower(bd.Type), "trigger") {
			triggers++
		}
	}
	if triggers != 1 {
		return nil, fmt.Errorf("function %s: %d trigger bindings, want exactly 1", name, triggers)
	}
	return f, nil
}
