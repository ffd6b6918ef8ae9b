// Command devstack is `make run`: the whole of offpath on one machine. It
// starts Azurite (state kept in .run/azurite), the Azure OpenAI simulator,
// and the dev host with the assembled app folder and its custom handler;
// prints what runs where and what to try; shows the chain working with a
// real call through the dev host; and runs until interrupted.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/local/devhost"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	args := os.Args[1:]
	var err error
	if len(args) > 0 && args[0] == "rescore" {
		err = runRescore(ctx, args[1:], os.Stdout)
	} else {
		err = run(ctx, args, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
}

// defaultPort is the dev host's port unless told otherwise, the Functions
// host's own (local.settings.json's Host.LocalHttpPort).
const defaultPort = 7071

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("devstack", flag.ContinueOnError)
	appDir := fs.String("app", "build/app", "assembled app folder (make app)")
	settingsFile := fs.String("settings", settingsSource(), "the app settings to start from, pointed at this stack")
	state := fs.String("state", ".run", "folder for Azurite's data, the logs and the env file")
	port := fs.Int("port", 0, fmt.Sprintf("port of the Functions HTTP front on 127.0.0.1 (default %d, or a free one when it is busy)", defaultPort))
	verbose := fs.Bool("verbose", false, "show the handler's and the dev host's full logs on the console too")
	speed := fs.Float64("speed", 600, "simulator clock factor (600: a 24-hour batch window passes in 2.4 minutes)")
	demo := fs.Bool("demo", true, "walk the demo through the API after start-up")
	extension := fs.String("storage-extension", "", "Storage extension whose blob trigger envelopes to send: 5 (5.x, the current one) or 4 (4.x, the older Properties); default the "+devhost.StorageExtensionSetting+" setting, else 5")
	if err := fs.Parse(args); err != nil {
		return err
	}
	started := time.Now()
	out := &console{w: stdout}
	fmt.Fprintf(out, "\n  offpath, the whole system on this machine\n\n")

	// The port first: a busy one is known before anything is installed.
	ln, note, err := listen(*port, defaultPort)
	if err != nil {
		return err
	}
	defer ln.Close()
	if note != "" {
		fmt.Fprintf(out, "  NOTE: %s\n\n", note)
	}

	logs := filepath.Join(*state, "logs")
	if err := os.MkdirAll(filepath.Join(*state, "azurite"), 0o755); err != nil {
		return fmt.Errorf("state folder: %w", err)
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return fmt.Errorf("logs folder: %w", err)
	}
	var readable io.Writer
	if *verbose {
		readable = zerolog.ConsoleWriter{Out: out, TimeFormat: "15:04:05"}
	}
	tap := func(name, source string) (*logTap, func(), error) {
		f, err := os.Create(filepath.Join(logs, name))
		if err != nil {
			return nil, nil, fmt.Errorf("log file: %w", err)
		}
		return &logTap{source: source, file: f, console: out, verbose: readable}, func() { f.Close() }, nil
	}
	handlerLog, closeHandlerLog, err := tap("handler.log", "handler")
	if err != nil {
		return err
	}
	defer closeHandlerLog()
	hostLog, closeHostLog, err := tap("devhost.log", "dev host")
	if err != nil {
		return err
	}
	defer closeHostLog()
	log := zerolog.New(hostLog).With().Timestamp().Logger()

	// Azurite: the real storage emulator, on free loopback ports.
	t0 := time.Now()
	bin, err := azurite.Binary()
	if err != nil {
		return err
	}
	azLog, err := os.Create(filepath.Join(logs, "azurite.log"))
	if err != nil {
		return fmt.Errorf("azurite log: %w", err)
	}
	defer azLog.Close()
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	az, err := azurite.Launch(startCtx, bin, filepath.Join(*state, "azurite"), azLog)
	cancel()
	if err != nil {
		return err
	}
	defer az.Stop()
	fmt.Fprintf(out, "  Azurite (Blob, Queue, Table Storage) started in %s; data in %s\n", ms(time.Since(t0)), filepath.Join(*state, "azurite"))

	// The Azure OpenAI simulator, in process.
	sim, err := aoaisim.New(aoaisim.Config{Deployments: aoaisim.DefaultDeployments(), Speed: speed}, log.Level(zerolog.WarnLevel).With().Str("component", "aoaisim").Logger())
	if err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	simURL, err := sim.Start("127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	defer sim.Close()

	// Demo tenants with known keys, and a little made-up usage.
	t0 = time.Now()
	seeded, err := seedDemo(ctx, az.ConnectionString(), *state, filepath.Join(*appDir, "models.json"), rand.Reader, time.Now())
	if err != nil {
		return fmt.Errorf("seed the demo tenants (did `make app` run?): %w", err)
	}
	fmt.Fprintf(out, "  Demo tenants contoso, fabrikam and support, and an admin key, ready in %s\n", ms(time.Since(t0)))

	// Every ledger change also goes, as token metrics, to a JSON-lines file.
	metricsFile, err := filepath.Abs(filepath.Join(*state, "metrics.jsonl"))
	if err != nil {
		return fmt.Errorf("state folder: %w", err)
	}
	// The app's local settings: the example's values, pointed at this stack.
	settings, err := writeSettings(*settingsFile, *appDir, map[string]string{
		"AzureWebJobsStorage":        az.ConnectionString(),
		"OFFPATH_AOAI_ENDPOINT":      simURL,
		"OFFPATH_AOAI_API_KEY":       aoaisim.DefaultKey,
		"OFFPATH_ADMIN_KEY_SHA256":   seeded.adminDigest,
		"OFFPATH_AOAI_LIMITS":        aoaiLimits(),
		"OFFPATH_TOKEN_METRICS_FILE": metricsFile,
	})
	if err != nil {
		return err
	}
	app, err := devhost.LoadApp(*appDir, os.Getenv)
	if err != nil {
		return fmt.Errorf("load app (did `make app` run?): %w", err)
	}
	if *extension != "" {
		if app.StorageExtension, err = devhost.ParseStorageExtension(*extension); err != nil {
			return err
		}
	}
	blobs, err := azblob.NewClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		return fmt.Errorf("blob client: %w", err)
	}
	host, err := devhost.New(devhost.Options{App: app, Storage: az.ConnectionString(), Listener: ln, HandlerOutput: handlerLog}, log)
	if err != nil {
		return err
	}
	runCtx, stopHost := context.WithCancel(ctx)
	defer stopHost()
	done := make(chan error, 1)
	go func() { done <- host.Run(runCtx) }()

	key := settings["DEVHOST_FUNCTION_KEY"]
	if err := waitHealthy(ctx, host.URL(), key, 30*time.Second, done); err != nil {
		return fmt.Errorf("the dev host did not answer (its log: %s): %w", filepath.Join(logs, "devhost.log"), err)
	}
	stack := stackInfo{HostURL: host.URL(), SimURL: simURL, Azurite: az, App: app, Settings: settings, Demo: seeded, State: *state, Logs: logs}
	env, err := writeEnv(ctx, filepath.Join(*state, "env"), blobs, stack)
	if err != nil {
		return err
	}
	banner(out, stack, env)
	fmt.Fprintf(out, "\n  Ready in %s. From here on: the demo's steps, warnings and alerts (full logs: %s%s).\n",
		ms(time.Since(started)), logs, map[bool]string{true: ", also shown here", false: "; make run VERBOSE=1 shows them here"}[*verbose])
	if *demo {
		runDemo(ctx, out, stack)
	}
	return <-done
}

// listen binds the dev host's HTTP front on 127.0.0.1 before anything
// starts: port when one is asked for (a busy one is an error), else def, or
// a free port when def is busy, which note says.
func listen(port, def int) (ln net.Listener, note string, err error) {
	if port != 0 {
		ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return nil, "", fmt.Errorf("port %d cannot be used (%w): choose another with PORT=…, or leave PORT unset to have a free one chosen", port, err)
		}
		return ln, "", nil
	}
	if ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", def)); err == nil {
		return ln, "", nil
	}
	busy := err
	if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, "", fmt.Errorf("port %d is busy (%v) and no free port was found: %w", def, busy, err)
	}
	p := ln.Addr().(*net.TCPAddr).Port
	return ln, fmt.Sprintf("port %d is busy (another make run?), so the dev host listens on port %d instead: use http://127.0.0.1:%d (also in .run/env), or choose with make run PORT=…", def, p, p), nil
}

// runDemo walks the demo through the whole chain, step by step, and stops
// at the first step that fails, saying why.
func runDemo(ctx context.Context, out io.Writer, s stackInfo) {
	key, master := s.Settings["DEVHOST_FUNCTION_KEY"], s.Settings["DEVHOST_MASTER_KEY"]
	contoso := s.Demo.keys.Tenants["contoso"]
	steps := []struct {
		what string
		run  func(n int) error
	}{
		{"the queue path", func(n int) error { return showDocument(ctx, out, n, s.Azurite.ConnectionString(), 60*time.Second) }},
		{"the usage", func(n int) error { return showUsage(ctx, out, n, s.HostURL, key, contoso) }},
		{"the batch path", func(n int) error { return showBatch(ctx, out, n, s.HostURL, key, master, contoso, 90*time.Second) }},
		{"the usage", func(n int) error { return showUsage(ctx, out, n, s.HostURL, key, contoso) }},
		{"the nightly summaries", func(n int) error {
			return showNightly(ctx, out, n, s.Azurite.ConnectionString(), s.HostURL, master, s.State, 90*time.Second)
		}},
	}
	for i, st := range steps {
		if err := st.run(i + 1); err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(out, "     ✗ %s failed: %v (full logs in %s)\n", st.what, err, s.Logs)
			}
			return
		}
	}
	fmt.Fprintf(out, "\n  Demo done. Try the re-scoring and cancel example: make demo-rescore. Ctrl-C stops everything; Azurite's data stays in %s.\n\n", filepath.Join(s.State, "azurite"))
}

// settingsSource is the repository's local.settings.json if the developer
// made one, else the example.
func settingsSource() string {
	if _, err := os.Stat("local.settings.json"); err == nil {
		return "local.settings.json"
	}
	return "local.settings.json.example"
}

// writeSettings writes appDir/local.settings.json from src, overriding
// values, and returns them.
func writeSettings(src, appDir string, overrides map[string]string) (map[string]string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", src, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	values, _ := doc["Values"].(map[string]any)
	if values == nil {
		values = map[string]any{}
	}
	for k, v := range overrides {
		values[k] = v
	}
	doc["Values"] = values
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode settings: %w", err)
	}
	if err := os.WriteFile(filepath.Join(appDir, "local.settings.json"), out, 0o600); err != nil {
		return nil, fmt.Errorf("write settings: %w", err)
	}
	flat := map[string]string{}
	for k, v := range values {
		if s, ok := v.(string); ok {
			flat[k] = s
		}
	}
	return flat, nil
}

// waitHealthy calls the API's health endpoint through the dev host, the
// whole chain (HTTP front, function key, forwarding, handler, API), until it
// answers 200, the host stops, or timeout passes.
func waitHealthy(ctx context.Context, hostURL, key string, timeout time.Duration, stopped <-chan error) error {
	deadline := time.Now().Add(timeout)
	for {
		status, err := call(ctx, http.MethodGet, hostURL+"/api/v1/health", key, "", nil, nil)
		if err == nil && status == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.Join(err, ctx.Err())
		}
		select {
		case err := <-stopped:
			return fmt.Errorf("the dev host stopped: %w", err)
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
