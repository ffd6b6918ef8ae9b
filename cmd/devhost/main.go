// Command devhost plays the Azure Functions host for an app folder on a
// machine without Core Tools: it starts the custom handler, serves HTTP
// functions on :7071, fires timers, watches blobs in Azurite and runs a
// durable Service Bus stand-in on Azurite queues. See package devhost.
//
//	devhost -app build/app [-storage "<connection string>"] [-addr 127.0.0.1:7071]
//
// The storage connection comes from -storage, else from local.settings.json's
// AzureWebJobsStorage (UseDevelopmentStorage=true means Azurite's default
// ports).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/local/devhost"
	"github.com/offpath/offpath/internal/local/sbemu"
	"github.com/offpath/offpath/internal/tablestore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "devhost:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("devhost", flag.ContinueOnError)
	appDir := fs.String("app", "build/app", "app folder (host.json, function folders, handler)")
	storage := fs.String("storage", "", "storage connection string (default: local.settings.json AzureWebJobsStorage)")
	addr := fs.String("addr", "", "HTTP address (default 127.0.0.1:<Host.LocalHttpPort>)")
	maxDelivery := fs.Int("sb-max-delivery-count", sbemu.DefaultMaxDeliveryCount, "Service Bus MaxDeliveryCount before dead-lettering")
	lock := fs.Duration("sb-lock-duration", sbemu.DefaultLockDuration, "Service Bus PeekLock lock duration")
	blobPoll := fs.Duration("blob-poll", 2*time.Second, "pause between blob container scans")
	console := fs.Bool("console", false, "human-readable logs instead of JSON lines")
	extension := fs.String("storage-extension", "", "Storage extension whose blob trigger envelopes to send: 5 (5.x, the current one) or 4 (4.x, the older Properties); default the "+devhost.StorageExtensionSetting+" setting, else 5")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var logw io.Writer = stdout
	if *console {
		logw = zerolog.ConsoleWriter{Out: stdout, TimeFormat: "15:04:05"}
	}
	logger := zerolog.New(logw).With().Timestamp().Str("service", "devhost").Logger()

	root, err := filepath.Abs(*appDir)
	if err != nil {
		return fmt.Errorf("app folder: %w", err)
	}
	app, err := devhost.LoadApp(root, getenv)
	if err != nil {
		return fmt.Errorf("load app: %w", err)
	}
	if *extension != "" {
		if app.StorageExtension, err = devhost.ParseStorageExtension(*extension); err != nil {
			return err
		}
	}
	conn := *storage
	if conn == "" {
		conn = app.Settings["AzureWebJobsStorage"]
	}
	if conn == "" {
		conn = "UseDevelopmentStorage=true"
	}
	conn = tablestore.ExpandDevelopmentStorage(conn)
	host, err := devhost.New(devhost.Options{
		App: app, Storage: conn, ServiceBus: sbemu.Options{LockDuration: *lock, MaxDeliveryCount: *maxDelivery},
		HTTPAddr: *addr, BlobPollInterval: *blobPoll, HandlerOutput: stdout,
	}, logger)
	if err != nil {
		return err
	}
	for _, fn := range app.Functions {
		t := fn.Trigger()
		logger.Info().Str("function", fn.Name).Str("trigger", t.Type).
			Str("detail", strings.TrimSpace(t.Route+t.Schedule+t.Path+t.QueueName)).Msg("function")
	}
	return host.Run(ctx)
}
