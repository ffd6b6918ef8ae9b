package sizing_test

import (
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/sizing"
)

// Worked examples of the formulas and the defaults committed under infra/.
func TestCompute(t *testing.T) {
	t.Parallel()
	// gpt-4o-mini at 1,000 units: 1M TPM, 6,000 RPM; 3,000 prompt tokens +
	// 1,000 max_tokens per call, one call per document, 8 s per call.
	reference := sizing.Inputs{TPM: 1_000_000, RPM: 6_000, TokensPerDocument: 4_000, CallsPerDocument: 1, LatencySeconds: 8}
	tests := []struct {
		name  string
		in    sizing.Inputs
		want  sizing.Plan
		notes int
	}{
		{
			// token bound 0.8·1M/120K = 6.6, request bound 0.8·6,000/30 = 160;
			// messageCount c·D/(k·L) = 4·120/8 = 60.
			name: "reference example: TPM binds",
			in:   reference,
			want: sizing.Plan{MaxReplicaCount: 6, MessageCount: 60, MaxConcurrentCalls: 4, TPMPerInstance: 133_333, RPMPerInstance: 800, Bound: "tokens", TokensPerCall: 4_000},
		},
		{
			name: "reference example: halving max_tokens gives 7",
			in:   with(reference, func(in *sizing.Inputs) { in.TokensPerDocument = 3_500 }),
			want: sizing.Plan{MaxReplicaCount: 7, MessageCount: 60, MaxConcurrentCalls: 4, TPMPerInstance: 114_285, RPMPerInstance: 685, Bound: "tokens", TokensPerCall: 3_500},
		},
		{
			name: "reference example: trimming the prompt too gives 10",
			in:   with(reference, func(in *sizing.Inputs) { in.TokensPerDocument = 2_500 }),
			want: sizing.Plan{MaxReplicaCount: 10, MessageCount: 60, MaxConcurrentCalls: 4, TPMPerInstance: 80_000, RPMPerInstance: 480, Bound: "tokens", TokensPerCall: 2_500},
		},
		{
			// o1-style ratio, 1 RPM per 6,000 TPM: 600K TPM, 100 RPM, short
			// calls of 1,000 tokens taking 20 s. Requests: 0.8·100·20/60 = 26.7
			// calls in flight, tokens allow 160.
			name: "RPM binds",
			in:   sizing.Inputs{TPM: 600_000, RPM: 100, TokensPerDocument: 1_000, CallsPerDocument: 1, LatencySeconds: 20},
			want: sizing.Plan{MaxReplicaCount: 6, MessageCount: 24, MaxConcurrentCalls: 4, TPMPerInstance: 80_000, RPMPerInstance: 13, Bound: "requests", TokensPerCall: 1_000},
		},
		{
			// infra/k8s defaults: gpt-4o-mini at 500 units (500K TPM, 3,000
			// RPM), 60% for the heavy workers, 10 calls of 4,000 tokens per
			// document: 0.48·500K·8/(60·4,000) = 8 calls in flight → 2 pods of 4.
			name: "heavy workers on AKS (infra defaults)",
			in:   sizing.Inputs{TPM: 500_000, RPM: 3_000, TokensPerDocument: 40_000, CallsPerDocument: 10, LatencySeconds: 8, Share: 0.6},
			want: sizing.Plan{MaxReplicaCount: 2, MessageCount: 6, MaxConcurrentCalls: 4, TPMPerInstance: 120_000, RPMPerInstance: 720, Bound: "tokens", TokensPerCall: 4_000},
		},
		{
			// main.parameters.json defaults: the other 40% for the Function
			// App, 3 calls per document. The quota allows one instance but
			// Flex's lowest cap is 40, so the budget is split 40 ways.
			name:  "light path on Flex (infra defaults)",
			in:    sizing.Inputs{TPM: 500_000, RPM: 3_000, TokensPerDocument: 12_000, CallsPerDocument: 3, LatencySeconds: 8, Share: 0.4, MinInstanceCap: 40},
			want:  sizing.Plan{MaxReplicaCount: 40, MessageCount: 20, MaxConcurrentCalls: 4, TPMPerInstance: 4_000, RPMPerInstance: 24, Bound: "tokens", TokensPerCall: 4_000},
			notes: 1,
		},
		{
			// 0.8·10K·8/(60·20K) = 0.053 calls in flight: one pod, one call.
			name:  "quota below one call",
			in:    sizing.Inputs{TPM: 10_000, RPM: 60, TokensPerDocument: 20_000, CallsPerDocument: 1, LatencySeconds: 8},
			want:  sizing.Plan{MaxReplicaCount: 1, MessageCount: 15, MaxConcurrentCalls: 1, TPMPerInstance: 8_000, RPMPerInstance: 48, Bound: "tokens", TokensPerCall: 20_000},
			notes: 2,
		},
		{
			// 50 calls of 800 tokens: 133 calls in flight → 33 pods of 4; one
			// document takes 400 s, more than D, so messageCount falls to c.
			name: "messageCount at least maxConcurrentCalls",
			in:   sizing.Inputs{TPM: 1_000_000, RPM: 6_000, TokensPerDocument: 40_000, CallsPerDocument: 50, LatencySeconds: 8, DrainSeconds: 60},
			want: sizing.Plan{MaxReplicaCount: 33, MessageCount: 4, MaxConcurrentCalls: 4, TPMPerInstance: 24_242, RPMPerInstance: 145, Bound: "tokens", TokensPerCall: 800},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := sizing.Compute(tt.in)
			if err != nil {
				t.Fatalf("Compute(%+v) error = %v", tt.in, err)
			}
			if len(got.Notes) != tt.notes {
				t.Errorf("Compute(%+v) notes = %q, want %d", tt.in, got.Notes, tt.notes)
			}
			got.Notes, got.ConcurrentCalls = nil, 0
			if got.MaxReplicaCount != tt.want.MaxReplicaCount || got.MessageCount != tt.want.MessageCount ||
				got.MaxConcurrentCalls != tt.want.MaxConcurrentCalls || got.TPMPerInstance != tt.want.TPMPerInstance ||
				got.RPMPerInstance != tt.want.RPMPerInstance || got.Bound != tt.want.Bound || got.TokensPerCall != tt.want.TokensPerCall {
				t.Errorf("Compute(%+v) =\n %+v\nwant\n %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestCompute_PoolStaysWithinQuota(t *testing.T) {
	t.Parallel()
	// Whatever the inputs, maxReplicaCount pods running maxConcurrentCalls
	// calls never exceed u·share of the quota (unless one call alone does).
	for _, tpm := range []int{30_000, 250_000, 1_000_000, 5_000_000} {
		for _, tokens := range []int{500, 4_000, 30_000} {
			for _, latency := range []float64{1, 8, 45} {
				in := sizing.Inputs{TPM: tpm, RPM: tpm / 1000 * 6, TokensPerDocument: tokens, CallsPerDocument: 1, LatencySeconds: latency, Share: 0.5}
				p, err := sizing.Compute(in)
				if err != nil {
					t.Fatalf("Compute(%+v) error = %v", in, err)
				}
				if p.ConcurrentCalls < 1 {
					continue
				}
				tokensPerMinute := float64(p.MaxReplicaCount*p.MaxConcurrentCalls) * 60 * float64(tokens) / latency
				requestsPerMinute := float64(p.MaxReplicaCount*p.MaxConcurrentCalls) * 60 / latency
				if tokensPerMinute > 0.4*float64(in.TPM)+1e-6 || requestsPerMinute > 0.4*float64(in.RPM)+1e-6 {
					t.Errorf("Compute(%+v) = %+v: pool sends %.0f tokens and %.1f requests a minute, over 40%% of %d TPM / %d RPM",
						in, p, tokensPerMinute, requestsPerMinute, in.TPM, in.RPM)
				}
			}
		}
	}
}

func TestCompute_Invalid(t *testing.T) {
	t.Parallel()
	valid := sizing.Inputs{TPM: 1_000, RPM: 6, TokensPerDocument: 10, CallsPerDocument: 1, LatencySeconds: 1}
	tests := []struct {
		name string
		in   sizing.Inputs
		want string
	}{
		{"no tpm", with(valid, func(in *sizing.Inputs) { in.TPM = 0 }), "tpm must be positive"},
		{"negative rpm", with(valid, func(in *sizing.Inputs) { in.RPM = -1 }), "rpm must be positive"},
		{"no calls", with(valid, func(in *sizing.Inputs) { in.CallsPerDocument = 0 }), "calls per document"},
		{"no latency", with(valid, func(in *sizing.Inputs) { in.LatencySeconds = 0 }), "latency seconds"},
		{"share above one", with(valid, func(in *sizing.Inputs) { in.Share = 1.5 }), "share must be in (0, 1]"},
		{"utilisation above one", with(valid, func(in *sizing.Inputs) { in.Utilisation = 2 }), "utilisation"},
		{"negative cap", with(valid, func(in *sizing.Inputs) { in.MinInstanceCap = -1 }), "min instance cap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := sizing.Compute(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compute(%+v) error = %v, want one containing %q", tt.in, err, tt.want)
			}
		})
	}
}

func with(in sizing.Inputs, change func(*sizing.Inputs)) sizing.Inputs {
	change(&in)
	return in
}

func TestQuota(t *testing.T) {
	t.Parallel()
	tpm, rpm, err := sizing.Quota("../../infra/model-deployments.json", "gpt-4o-mini")
	if err != nil || tpm != 500_000 || rpm != 3_000 {
		t.Errorf(`Quota("gpt-4o-mini") = %d, %d, %v; want 500000, 3000 (the scenario of the committed defaults)`, tpm, rpm, err)
	}
	if _, _, err := sizing.Quota("../../infra/model-deployments.json", "gpt-4o-mini-batch"); err == nil {
		t.Error(`Quota("gpt-4o-mini-batch") succeeded; a GlobalBatch deployment has no TPM`)
	}
	if _, _, err := sizing.Quota("../../infra/model-deployments.json", "nope"); err == nil || !strings.Contains(err.Error(), `no deployment "nope"`) {
		t.Errorf(`Quota("nope") error = %v`, err)
	}
}

// TestCompute_ShareNeverRoundsToZero: a small RPM divided among more
// instances than it has requests per minute still gives each instance one
// (ratelimit.PerInstance, the formula the handler's limiter uses): a
// budget of 0 would mean "no limit" to the limiter.
func TestCompute_ShareNeverRoundsToZero(t *testing.T) {
	t.Parallel()
	p, err := sizing.Compute(sizing.Inputs{TPM: 1_000_000, RPM: 6, TokensPerDocument: 100, CallsPerDocument: 1, LatencySeconds: 1, MinInstanceCap: 20})
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxReplicaCount <= 6 || p.RPMPerInstance != 1 || p.TPMPerInstance != 1_000_000*8/10/p.MaxReplicaCount {
		t.Errorf("plan %+v: want more than 6 replicas, each with 1 RPM and the TPM share", p)
	}
}
