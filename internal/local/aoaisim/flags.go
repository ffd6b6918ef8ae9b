package aoaisim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultDeployments are used by cmd/aoaisim when neither a config file nor
// -deployment flags name any: a standard chat deployment, an embedding
// deployment and a global-batch deployment (as deployments.example.json).
func DefaultDeployments() []Deployment {
	return []Deployment{
		{Name: "gpt-4o-mini", Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: TypeStandard, TPM: 30_000},
		{Name: "text-embedding-3-small", Model: "text-embedding-3-small", Type: TypeStandard, TPM: 120_000},
		{Name: "gpt-4o-mini-batch", Model: "gpt-4o-mini", ModelVersion: "2024-07-18", Type: TypeGlobalBatch,
			EnqueuedTokenQuota: 5_000_000, QuotaBehaviour: QuotaFailFast},
	}
}

// keyValues splits "k=v,k=v".
func keyValues(s string) (map[string]string, error) {
	kv := make(map[string]string)
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not key=value", part)
		}
		kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return kv, nil
}

// ParseDeployment reads a -deployment flag value:
// "name=gpt-4o-mini,model=gpt-4o-mini,type=standard,tpm=30000,rpm=180,
// dimensions=1536,quota=5000000,quota_behaviour=fail_fast,lines_per_minute=1000,version=2024-07-18".
func ParseDeployment(s string) (Deployment, error) {
	kv, err := keyValues(s)
	if err != nil {
		return Deployment{}, fmt.Errorf("parse deployment: %w", err)
	}
	var d Deployment
	for k, v := range kv {
		switch k {
		case "name":
			d.Name = v
		case "model":
			d.Model = v
		case "version":
			d.ModelVersion = v
		case "type":
			d.Type = v
		case "quota_behaviour":
			d.QuotaBehaviour = v
		case "tpm", "rpm", "quota", "dimensions":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return Deployment{}, fmt.Errorf("parse deployment %s: %w", k, err)
			}
			switch k {
			case "tpm":
				d.TPM = n
			case "rpm":
				d.RPM = n
			case "quota":
				d.EnqueuedTokenQuota = n
			default:
				d.Dimensions = int(n)
			}
		case "lines_per_minute":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return Deployment{}, fmt.Errorf("parse deployment %s: %w", k, err)
			}
			d.BatchLinesPerMinute = f
		default:
			return Deployment{}, fmt.Errorf("parse deployment: unknown key %q", k)
		}
	}
	if d.Model == "" {
		d.Model = d.Name
	}
	return d, nil
}

// ParseFaultRule reads a -fault flag value:
// "deployment=gpt-4o-mini,route=chat,error_rate=0.1,error_status=503,
// latency=50ms,reset_rate=0.01,hang_rate=0.01,output_file_delay=10m".
func ParseFaultRule(s string) (FaultRule, error) {
	kv, err := keyValues(s)
	if err != nil {
		return FaultRule{}, fmt.Errorf("parse fault: %w", err)
	}
	var r FaultRule
	for k, v := range kv {
		var perr error
		switch k {
		case "deployment":
			r.Deployment = v
		case "route":
			r.Route = v
		case "error_rate":
			r.ErrorRate, perr = strconv.ParseFloat(v, 64)
		case "reset_rate":
			r.ResetRate, perr = strconv.ParseFloat(v, 64)
		case "hang_rate":
			r.HangRate, perr = strconv.ParseFloat(v, 64)
		case "error_status":
			r.ErrorStatus, perr = strconv.Atoi(v)
		case "latency", "output_file_delay", "hold_validating":
			var d time.Duration
			d, perr = time.ParseDuration(v)
			switch k {
			case "latency":
				r.Latency = Duration(d)
			case "output_file_delay":
				r.OutputFileDelay = Duration(d)
			default:
				r.HoldValidating = Duration(d)
			}
		default:
			return FaultRule{}, fmt.Errorf("parse fault: unknown key %q", k)
		}
		if perr != nil {
			return FaultRule{}, fmt.Errorf("parse fault %s: %w", k, perr)
		}
	}
	if err := r.validate(); err != nil {
		return FaultRule{}, fmt.Errorf("parse fault: %w", err)
	}
	return r, nil
}
