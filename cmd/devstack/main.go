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
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/aoaisim"
	"github.com/offpath/offpath/internal/azurite"
	"github.com/offpath/offpath/internal/devhost"
	"github.com/offpath/offpath/internal/sbemu"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("devstack", flag.ContinueOnError)
	appDir := fs.String("app", "build/app", "assembled app folder (make app)")
	state := fs.String("state", ".run", "folder for Azurite's data and the logs")
	addr := fs.String("addr", "127.0.0.1:7071", "address of the Functions HTTP front")
	speed := fs.Float64("speed", 600, "simulator clock factor (600: a 24-hour batch window passes in 2.4 minutes)")
	demo := fs.Bool("demo", true, "call the API once through the dev host after start-up")
	extension := fs.String("storage-extension", "", "Storage extension whose blob trigger envelopes to send: 5 (5.x, the current one) or 4 (4.x, the older Properties); default the "+devhost.StorageExtensionSetting+" setting, else 5")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := zerolog.New(zerolog.ConsoleWriter{Out: stdout, TimeFormat: "15:04:05"}).With().Timestamp().Logger()
	if err := os.MkdirAll(filepath.Join(*state, "azurite"), 0o755); err != nil {
		return fmt.Errorf("state folder: %w", err)
	}

	// Azurite: the real storage emulator, on free loopback ports.
	bin, err := azurite.Binary()
	if err != nil {
		return err
	}
	azLog, err := os.Create(filepath.Join(*state, "azurite.log"))
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

	// The Azure OpenAI simulator, in process.
	sim, err := aoaisim.New(aoaisim.Config{Deployments: aoaisim.DefaultDeployments(), Speed: speed}, log.Level(zerolog.WarnLevel))
	if err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	simURL, err := sim.Start("127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	defer sim.Close()

	// Demo tenants with known keys, and a little made-up usage.
	seeded, err := seedDemo(ctx, az.ConnectionString(), *state, filepath.Join(*appDir, "models.json"), rand.Reader, time.Now())
	if err != nil {
		return fmt.Errorf("seed the demo tenants (did `make app` run?): %w", err)
	}

	// Every ledger change also goes, as token metrics, to a JSON-lines file.
	metricsFile, err := filepath.Abs(filepath.Join(*state, "metrics.jsonl"))
	if err != nil {
		return fmt.Errorf("state folder: %w", err)
	}
	// The app's local settings: the example's values, pointed at this stack.
	settings, err := writeSettings(settingsSource(), *appDir, map[string]string{
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
	queues, err := azqueue.NewServiceClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		return fmt.Errorf("queue client: %w", err)
	}
	broker, err := sbemu.New(queues, blobs, sbemu.Options{Logger: log})
	if err != nil {
		return fmt.Errorf("service bus stand-in: %w", err)
	}
	host, err := devhost.New(devhost.Options{App: app, Blobs: blobs, Queues: queues, Broker: broker, HTTPAddr: *addr, HandlerOutput: stdout}, log)
	if err != nil {
		return err
	}
	runCtx, stopHost := context.WithCancel(ctx)
	defer stopHost()
	done := make(chan error, 1)
	go func() { done <- host.Run(runCtx) }()

	key := settings["DEVHOST_FUNCTION_KEY"]
	banner(stdout, host.URL(), simURL, az, app, settings)
	tenantsBanner(stdout, host.URL(), az, settings, seeded)
	if *demo {
		if err := showHealth(ctx, stdout, host.URL(), key); err != nil {
			log.Error().Err(err).Msg("the first call through the dev host failed")
		} else if err := showDocument(ctx, stdout, az.ConnectionString(), 60*time.Second); err != nil {
			log.Error().Err(err).Msg("the demo document did not make it through the queue path")
		} else if err := showUsage(ctx, stdout, host.URL(), key, seeded.keys.Tenants["contoso"]); err != nil {
			log.Error().Err(err).Msg("the usage call through the dev host failed")
		} else if err := showBatch(ctx, stdout, host.URL(), key, settings["DEVHOST_MASTER_KEY"], seeded.keys.Tenants["contoso"], 90*time.Second); err != nil {
			log.Error().Err(err).Msg("the demo batch job did not make it through")
		} else if err := showUsage(ctx, stdout, host.URL(), key, seeded.keys.Tenants["contoso"]); err != nil {
			log.Error().Err(err).Msg("the usage call through the dev host failed")
		} else if err := showNightly(ctx, stdout, az.ConnectionString(), host.URL(), settings["DEVHOST_MASTER_KEY"], *state, 90*time.Second); err != nil {
			log.Error().Err(err).Msg("the nightly summaries did not produce their morning report")
		}
	}
	return <-done
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

func banner(w io.Writer, hostURL, simURL string, az *azurite.Azurite, app *devhost.App, s map[string]string) {
	fmt.Fprintf(w, "\n  offpath is running locally\n\n")
	fmt.Fprintf(w, "  Functions (dev host)   %s   function key %q, master key %q\n", hostURL, s["DEVHOST_FUNCTION_KEY"], s["DEVHOST_MASTER_KEY"])
	fmt.Fprintf(w, "  Azure OpenAI simulator %s   api-key %q\n", simURL, aoaisim.DefaultKey)
	fmt.Fprintf(w, "  Azurite blob/queue/table %s  %s  %s\n", az.BlobURL, az.QueueURL, az.TableURL)
	fmt.Fprintf(w, "  Functions:")
	for _, fn := range app.Functions {
		fmt.Fprintf(w, " %s (%s)", fn.Name, fn.Trigger().Type)
	}
	fmt.Fprintf(w, "\n  Token metrics          %s   (Application Insights' stream, one ledger change a line)", s["OFFPATH_TOKEN_METRICS_FILE"])
	fmt.Fprintf(w, "\n  Blob triggers          as the Storage extension %s sends them (%s, -storage-extension)\n", app.StorageExtension, devhost.StorageExtensionSetting)
	fmt.Fprintf(w, "\n  Try:\n")
	fmt.Fprintf(w, "    curl -s -H 'x-functions-key: %s' %s/api/v1/health\n", s["DEVHOST_FUNCTION_KEY"], hostURL)
	fmt.Fprintf(w, "    curl -s -H 'x-functions-key: %s' %s/api/v1/version\n", s["DEVHOST_FUNCTION_KEY"], hostURL)
	fmt.Fprintf(w, "    curl -s -H 'api-key: %s' %s/_sim/state\n", aoaisim.DefaultKey, simURL)
}

// showHealth calls the API's health endpoint through the dev host, the
// whole chain: HTTP front, function key, forwarding, handler, API.
func showHealth(ctx context.Context, w io.Writer, hostURL, key string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, hostURL+"/api/v1/health", nil)
		if err != nil {
			return err
		}
		req.Header.Set("x-functions-key", key)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				fmt.Fprintf(w, "  GET /api/v1/health through the dev host → %d %s\n", res.StatusCode, body)
				return nil
			}
			err = fmt.Errorf("status %d: %s", res.StatusCode, body)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.Join(err, ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
