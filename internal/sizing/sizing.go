package sizing

import (
	"errors"
	"fmt"
	"math"

	"github.com/offpath/offpath/internal/ratelimit"
)

// Defaults of Inputs.
const (
	DefaultUtilisation    = 0.8
	DefaultShare          = 1.0
	DefaultMaxConcurrency = 4
	DefaultDrainSeconds   = 120
)

// Inputs describe one pool of workers (the AKS heavy workers, or the
// Functions instances on the light queue) and the deployment it calls.
// Zero optional fields take the documented defaults.
type Inputs struct {
	// TPM and RPM are the deployment's limits: sku.capacity × 1,000 tokens
	// per minute, and the requests per minute Azure derives from it (6 per
	// 1,000 TPM for most chat models; read the model's ratio). Required.
	TPM int `json:"tpm"`
	RPM int `json:"rpm"`
	// TokensPerDocument are the tokens the TPM limiter counts for one
	// document: prompt tokens plus max_tokens of every call, not the billed
	// tokens. Required.
	TokensPerDocument int `json:"tokens_per_document"`
	// CallsPerDocument are the model calls one document makes. Required.
	CallsPerDocument int `json:"calls_per_document"`
	// LatencySeconds is the mean duration of one call. Required.
	LatencySeconds float64 `json:"latency_seconds"`
	// Share is the fraction of the deployment this pool may use, when the
	// Functions app and the AKS workers share one deployment. Default 1.
	Share float64 `json:"share"`
	// Utilisation is the target fraction of the (shared) quota, leaving
	// headroom for bursts and estimation error. Default 0.8.
	Utilisation float64 `json:"utilisation"`
	// MaxConcurrency caps calls in flight on one instance
	// (maxConcurrentCalls). Default 4.
	MaxConcurrency int `json:"max_concurrency"`
	// DrainSeconds is how long one replica should take to clear the
	// messages KEDA assigns it. Default 120.
	DrainSeconds float64 `json:"drain_seconds"`
	// MinInstanceCap is the lowest instance cap the platform accepts
	// (Flex Consumption: 40). When the quota allows fewer instances, the cap
	// stays at this value and the per-instance budget is divided by it
	// instead, so the rate limiter keeps the pool within quota. Default 0.
	MinInstanceCap int `json:"min_instance_cap"`
}

// Plan is what Compute derives.
type Plan struct {
	// MaxReplicaCount is the KEDA ScaledObject's maxReplicaCount (or the
	// Flex maximumInstanceCount).
	MaxReplicaCount int `json:"max_replica_count"`
	// MessageCount is the azure-servicebus trigger's messageCount: target
	// active messages per replica.
	MessageCount int `json:"message_count"`
	// MaxConcurrentCalls is the Functions host's
	// extensions.serviceBus.maxConcurrentCalls per instance.
	MaxConcurrentCalls int `json:"max_concurrent_calls"`
	// TPMPerInstance and RPMPerInstance are one instance's static
	// rate-limit share: the pool's share of u·TPM and u·RPM over
	// MaxReplicaCount. With the quota shared through leases it is the
	// fallback while the lease store cannot be reached.
	TPMPerInstance int `json:"tpm_per_instance"`
	RPMPerInstance int `json:"rpm_per_instance"`
	// Bound names the limit that binds: "tokens" or "requests".
	Bound string `json:"bound"`
	// TokensPerCall is t, the counted tokens of one call.
	TokensPerCall float64 `json:"tokens_per_call"`
	// ConcurrentCalls is the whole pool's budget of calls in flight,
	// min(u·TPM·L/(60·t), u·RPM·L/60), before rounding.
	ConcurrentCalls float64 `json:"concurrent_calls"`
	// Notes explain adjustments (a quota below one call, a raised cap).
	Notes []string `json:"notes,omitempty"`
}

// Compute derives a Plan from in.
func Compute(in Inputs) (Plan, error) {
	in = withDefaults(in)
	if err := in.validate(); err != nil {
		return Plan{}, err
	}
	var p Plan
	share := in.Share * in.Utilisation
	p.TokensPerCall = float64(in.TokensPerDocument) / float64(in.CallsPerDocument)
	tokenCalls := share * float64(in.TPM) * in.LatencySeconds / (60 * p.TokensPerCall)
	requestCalls := share * float64(in.RPM) * in.LatencySeconds / 60
	p.ConcurrentCalls, p.Bound = tokenCalls, "tokens"
	if requestCalls < tokenCalls {
		p.ConcurrentCalls, p.Bound = requestCalls, "requests"
	}

	p.MaxConcurrentCalls = in.MaxConcurrency
	if whole := int(math.Floor(p.ConcurrentCalls)); whole < p.MaxConcurrentCalls {
		p.MaxConcurrentCalls = max(whole, 1)
		p.Notes = append(p.Notes, fmt.Sprintf("the quota admits %.2f calls in flight in the whole pool: maxConcurrentCalls lowered to %d", p.ConcurrentCalls, p.MaxConcurrentCalls))
	}
	p.MaxReplicaCount = int(math.Floor(p.ConcurrentCalls / float64(p.MaxConcurrentCalls)))
	if p.MaxReplicaCount < 1 {
		p.MaxReplicaCount = 1
		p.Notes = append(p.Notes, "one call at a time already exceeds the quota share: one replica, and the rate limiter makes it wait")
	}
	if p.MaxReplicaCount < in.MinInstanceCap {
		p.Notes = append(p.Notes, fmt.Sprintf("the platform's lowest instance cap is %d, above the %d the quota allows: the per-instance budget is divided by %d", in.MinInstanceCap, p.MaxReplicaCount, in.MinInstanceCap))
		p.MaxReplicaCount = in.MinInstanceCap
	}

	perMessage := float64(in.CallsPerDocument) * in.LatencySeconds
	p.MessageCount = max(int(math.Floor(float64(p.MaxConcurrentCalls)*in.DrainSeconds/perMessage)), p.MaxConcurrentCalls)

	budget := ratelimit.PerInstance(ratelimit.Limits{TPM: int64(math.Floor(share * float64(in.TPM))), RPM: int64(math.Floor(share * float64(in.RPM)))},
		p.MaxReplicaCount)
	p.TPMPerInstance, p.RPMPerInstance = int(budget.TPM), int(budget.RPM)
	return p, nil
}

func withDefaults(in Inputs) Inputs {
	if in.Share == 0 {
		in.Share = DefaultShare
	}
	if in.Utilisation == 0 {
		in.Utilisation = DefaultUtilisation
	}
	if in.MaxConcurrency == 0 {
		in.MaxConcurrency = DefaultMaxConcurrency
	}
	if in.DrainSeconds == 0 {
		in.DrainSeconds = DefaultDrainSeconds
	}
	return in
}

func (in Inputs) validate() error {
	var errs []error
	positive := func(name string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("%s must be positive, got %v", name, v))
		}
	}
	positive("tpm", float64(in.TPM))
	positive("rpm", float64(in.RPM))
	positive("tokens per document", float64(in.TokensPerDocument))
	positive("calls per document", float64(in.CallsPerDocument))
	positive("latency seconds", in.LatencySeconds)
	positive("max concurrency", float64(in.MaxConcurrency))
	positive("drain seconds", in.DrainSeconds)
	if !(in.Share > 0 && in.Share <= 1) {
		errs = append(errs, fmt.Errorf("share must be in (0, 1], got %v", in.Share))
	}
	if !(in.Utilisation > 0 && in.Utilisation <= 1) {
		errs = append(errs, fmt.Errorf("utilisation must be in (0, 1], got %v", in.Utilisation))
	}
	if in.MinInstanceCap < 0 {
		errs = append(errs, fmt.Errorf("min instance cap must not be negative, got %d", in.MinInstanceCap))
	}
	if len(errs) > 0 {
		return fmt.Errorf("sizing inputs: %w", errors.Join(errs...))
	}
	return nil
}
