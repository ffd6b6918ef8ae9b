package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	builtin "github.com/offpath/offpath"
	"github.com/offpath/offpath/internal/sizing"
)

// sizing derives the worker pool's limits from a deployment's quota and,
// with -write, puts them into the manifests or the Bicep parameters.
func (c *cli) sizing(args []string) error {
	fs := c.flags("sizing", "-tokens-per-document N [-deployment D | -tpm T -rpm R] [flags] | -batch [-batch-utilisation U]",
		"With -batch, derive OFFPATH_BATCH_QUOTA from the catalog's enqueued-token quotas. Otherwise derive maxReplicaCount, KEDA messageCount, maxConcurrentCalls and per-instance TPM/RPM from the deployment's quota;\n-write puts them into the infrastructure files (infra/k8s for aks, infra/main.parameters.json for flex).")
	deployments := fs.String("deployments", "", "model deployments file, capacity = TPM in thousands (default: the built-in infra/model-deployments.json)")
	deployment := fs.String("deployment", "gpt-4o-mini", "deployment whose quota the pool shares")
	tpm := fs.Int("tpm", 0, "tokens per minute (overrides the deployments file)")
	rpm := fs.Int("rpm", 0, "requests per minute (overrides the deployments file)")
	tokens := fs.Int("tokens-per-document", 0, "counted tokens (prompt + max tokens) of one document, all calls (required)")
	calls := fs.Int("calls-per-document", 1, "model calls per document")
	latency := fs.Float64("latency", 8, "seconds per model call")
	share := fs.Float64("share", sizing.DefaultShare, "share of the deployment's quota this pool may use")
	util := fs.Float64("utilisation", sizing.DefaultUtilisation, "target utilisation of the quota")
	maxConc := fs.Int("max-concurrency", sizing.DefaultMaxConcurrency, "cap on concurrent calls per instance")
	drain := fs.Float64("drain-seconds", sizing.DefaultDrainSeconds, "seconds a backlog per replica should take to drain")
	pool := fs.String("pool", "aks", "aks (KEDA ScaledObject) or flex (Function App instances)")
	write := fs.Bool("write", false, "write the plan into infra/k8s (aks) or infra/main.parameters.json (flex)")
	infra := fs.String("infra", "infra", "the infrastructure folder -write changes")
	asJSON := fs.Bool("json", false, "print JSON")
	batch := fs.Bool("batch", false, "derive OFFPATH_BATCH_QUOTA instead: the enqueued-token limit per Global Batch deployment, from the quotas the catalog (-models) states")
	batchUtil := fs.Float64("batch-utilisation", sizing.DefaultBatchUtilisation, "with -batch: the share of each deployment's enqueued-token quota offpath admits up to")
	if pos, err := c.parse(fs, args); err != nil {
		return err
	} else if err := none(fs, pos, ""); err != nil {
		return err
	}
	if *batch {
		return c.batchSizing(*batchUtil, *asJSON)
	}
	if *tokens <= 0 {
		return usagef("sizing: missing -tokens-per-document (the counted tokens of one document, all calls)")
	}
	in := sizing.Inputs{TPM: *tpm, RPM: *rpm, TokensPerDocument: *tokens, CallsPerDocument: *calls, LatencySeconds: *latency,
		Share: *share, Utilisation: *util, MaxConcurrency: *maxConc, DrainSeconds: *drain}
	var paths []string
	switch *pool {
	case "aks":
		paths = []string{filepath.Join(*infra, "k8s", "scaledobject.yaml"), filepath.Join(*infra, "k8s", "deployment.yaml")}
	case "flex":
		in.MinInstanceCap = 40
		paths = []string{filepath.Join(*infra, "main.parameters.json")}
	default:
		return usagef("sizing: -pool %q: want aks or flex", *pool)
	}
	if in.TPM == 0 {
		t, r, err := sizing.QuotaOf(builtin.Deployments, "the built-in infra/model-deployments.json", *deployment)
		if *deployments != "" {
			t, r, err = sizing.Quota(*deployments, *deployment)
		}
		if err != nil {
			return err
		}
		in.TPM, in.RPM = t, max(in.RPM, r)
	}
	plan, err := sizing.Compute(in)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := c.printJSON(plan); err != nil {
			return err
		}
	} else {
		g := &grid{right: []bool{false, true}}
		g.add("SETTING", "VALUE")
		g.add("maxReplicaCount", strconv.Itoa(plan.MaxReplicaCount))
		g.add("messageCount (KEDA)", strconv.Itoa(plan.MessageCount))
		g.add("maxConcurrentCalls", strconv.Itoa(plan.MaxConcurrentCalls))
		g.add("TPM per instance", strconv.Itoa(plan.TPMPerInstance))
		g.add("RPM per instance", strconv.Itoa(plan.RPMPerInstance))
		g.add("binding limit", plan.Bound)
		if err := g.write(c.out); err != nil {
			return err
		}
		for _, n := range plan.Notes {
			fmt.Fprintln(c.out, "note:", n)
		}
	}
	if !*write {
		return nil
	}
	if _, err := os.Stat(*infra); err != nil {
		return fmt.Errorf("sizing -write: the infrastructure folder: %w (run it in the repository, or pass -infra DIR)", err)
	}
	if err := sizing.Apply(plan, paths...); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "wrote %v\n", paths)
	return nil
}

// batchSizing prints the OFFPATH_BATCH_QUOTA setting derived from the
// catalog's enqueued-token quotas.
func (c *cli) batchSizing(utilisation float64, asJSON bool) error {
	cat, err := c.catalog()
	if err != nil {
		return err
	}
	plan, unstated, err := sizing.BatchPlan(cat, utilisation)
	if err != nil {
		return err
	}
	if asJSON {
		return c.printJSON(map[string]any{"deployments": plan, "unstated": nonNil(unstated), "setting": sizing.BatchSetting(plan)})
	}
	g := &grid{right: []bool{false, true, true, true}}
	g.add("DEPLOYMENT", "GRANTED", "SETTING", "FULL PARTS AT ONCE")
	for _, q := range plan {
		g.add(q.Deployment, thousands(q.Granted), thousands(q.Setting), strconv.FormatInt(q.PartsAtOnce, 10))
	}
	if err := g.write(c.out); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "\napp setting:\n\n  OFFPATH_BATCH_QUOTA=%s\n", sizing.BatchSetting(plan))
	for _, d := range unstated {
		fmt.Fprintf(c.out, "note: %s states no enqueued_token_quota in the catalog; only Azure's refusals limit it\n", d)
	}
	return nil
}
