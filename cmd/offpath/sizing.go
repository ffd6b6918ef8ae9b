package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strconv"

	"github.com/offpath/offpath/internal/sizing"
)

// sizing derives the worker pool's limits from a deployment's quota and,
// with -write, puts them into the manifests or the Bicep parameters.
func (c *cli) sizing(args []string) error {
	fs := flag.NewFlagSet("sizing", flag.ContinueOnError)
	fs.SetOutput(c.out)
	deployments := fs.String("deployments", "infra/model-deployments.json", "model deployments file (capacity = TPM in thousands)")
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
	asJSON := fs.Bool("json", false, "print JSON")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return fmt.Errorf("sizing takes no arguments")
	}
	in := sizing.Inputs{TPM: *tpm, RPM: *rpm, TokensPerDocument: *tokens, CallsPerDocument: *calls, LatencySeconds: *latency,
		Share: *share, Utilisation: *util, MaxConcurrency: *maxConc, DrainSeconds: *drain}
	var paths []string
	switch *pool {
	case "aks":
		paths = []string{"infra/k8s/scaledobject.yaml", "infra/k8s/deployment.yaml"}
	case "flex":
		in.MinInstanceCap = 40
		paths = []string{"infra/main.parameters.json"}
	default:
		return fmt.Errorf("-pool %q: want aks or flex", *pool)
	}
	if in.TPM == 0 {
		t, r, err := sizing.Quota(*deployments, *deployment)
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
		enc := json.NewEncoder(c.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(plan); err != nil {
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
	if err := sizing.Apply(plan, paths...); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "wrote %v\n", paths)
	return nil
}
