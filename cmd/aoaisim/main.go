// Command aoaisim runs the Azure OpenAI simulator (package
// internal/local/aoaisim) on a loopback port: chat completions, embeddings, files
// and Global Batch jobs with a speed-adjustable clock, for `make run` and for
// rehearsing quota, refusal and outage scenarios locally.
//
//	aoaisim -config cmd/aoaisim/deployments.example.json -speed 600
//
// It prints the URL it listens on and the deployments it serves, then runs
// until interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/offpath/offpath/internal/local/aoaisim"
	"github.com/rs/zerolog"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "aoaisim:", err)
		os.Exit(1)
	}
}

// repeated collects a flag given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, " ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("aoaisim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (loopback by default; port 0 picks a free port)")
	configPath := fs.String("config", "", "JSON configuration file (see internal/local/aoaisim package docs)")
	speed := fs.Float64("speed", -1, "simulated clock factor (e.g. 3600: an hour per second; 0 freezes the clock); overrides the config")
	keys := fs.String("keys", "", "comma-separated API keys; overrides the config (default "+aoaisim.DefaultKey+")")
	dataDir := fs.String("data-dir", "", "directory for files (default: a temporary directory removed on exit)")
	seed := fs.Uint64("seed", 0, "seed of fault injection and output shuffling (default 1)")
	noLimits := fs.Bool("no-limits", false, "disable TPM/RPM limits")
	logLevel := fs.String("log-level", "info", "zerolog level")
	var deployments, faults repeated
	fs.Var(&deployments, "deployment", "deployment as name=..,model=..,type=standard|global-batch,tpm=..,rpm=..,quota=..,quota_behaviour=.. (repeatable; replaces the config's)")
	fs.Var(&faults, "fault", "fault rule as deployment=..,route=..,error_rate=..,error_status=..,latency=..,reset_rate=..,hang_rate=..,output_file_delay=.. (repeatable; added to the config's)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parse flags: %w", err)
	}

	level, err := zerolog.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("parse log level: %w", err)
	}
	logger := zerolog.New(stderr).Level(level).With().Timestamp().Logger()

	var cfg aoaisim.Config
	if *configPath != "" {
		if cfg, err = aoaisim.LoadConfig(*configPath); err != nil {
			return err
		}
	}
	if len(deployments) > 0 {
		cfg.Deployments = nil
		for _, d := range deployments {
			dep, err := aoaisim.ParseDeployment(d)
			if err != nil {
				return err
			}
			cfg.Deployments = append(cfg.Deployments, dep)
		}
	}
	if len(cfg.Deployments) == 0 {
		cfg.Deployments = aoaisim.DefaultDeployments()
	}
	for _, f := range faults {
		rule, err := aoaisim.ParseFaultRule(f)
		if err != nil {
			return err
		}
		cfg.Faults = append(cfg.Faults, rule)
	}
	if *speed >= 0 {
		cfg.Speed = speed
	}
	if *keys != "" {
		cfg.Keys = strings.Split(*keys, ",")
	}
	if *dataDir != "" {
		cfg.DataDir = *dataDir
	}
	if *seed != 0 {
		cfg.Seed = *seed
	}
	cfg.DisableRateLimits = cfg.DisableRateLimits || *noLimits

	sim, err := aoaisim.New(cfg, logger)
	if err != nil {
		return fmt.Errorf("start simulator: %w", err)
	}
	url, err := sim.Start(*addr)
	if err != nil {
		return errors.Join(err, sim.Close())
	}
	printBanner(stdout, url, sim)
	<-ctx.Done()
	fmt.Fprintln(stdout, "aoaisim: stopping")
	return sim.Close()
}

func printBanner(w io.Writer, url string, sim *aoaisim.Server) {
	fmt.Fprintf(w, "aoaisim listening on %s (speed %gx)\n", url, sim.Clock().Speed())
	fmt.Fprintf(w, "  classic: azure.WithEndpoint(%q, \"2025-04-01-preview\")\n", url)
	fmt.Fprintf(w, "  v1:      option.WithBaseURL(%q)\n", url+"/openai/v1/")
	fmt.Fprintf(w, "  admin:   %s/_sim/state\n", url)
	fmt.Fprintln(w, "deployments:")
	for _, d := range sim.Deployments() {
		switch d.Type {
		case aoaisim.TypeGlobalBatch:
			fmt.Fprintf(w, "  %-24s %-24s %-12s enqueued quota %d (%s)\n", d.Name, d.Model, d.Type, d.EnqueuedTokenQuota, d.QuotaBehaviour)
		default:
			fmt.Fprintf(w, "  %-24s %-24s %-12s tpm %d rpm %d\n", d.Name, d.Model, d.Type, d.TPM, d.RPM)
		}
	}
}
