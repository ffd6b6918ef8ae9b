package ratelimit

import (
	"math"
	"testing"
	"time"
)

func TestFairShares(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		wants map[string]float64
		want  map[string]float64
	}{
		{"alone takes the whole", map[string]float64{"a": 0.1}, map[string]float64{"a": 1}},
		{"equal wants split equally", map[string]float64{"a": 1, "b": 1, "c": 1, "d": 1}, map[string]float64{"a": 0.25, "b": 0.25, "c": 0.25, "d": 0.25}},
		{"a light one gets what it wants, the heavy the rest", map[string]float64{"light": 0.05, "heavy": 3}, map[string]float64{"light": 0.05, "heavy": 0.95}},
		{"what nobody wants is split as headroom", map[string]float64{"a": 0.1, "b": 0.3}, map[string]float64{"a": 0.4, "b": 0.6}},
		{"max-min: the small wants are met first", map[string]float64{"a": 0.1, "b": 0.5, "c": 0.5}, map[string]float64{"a": 0.1, "b": 0.45, "c": 0.45}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := fairShares(tt.wants)
			sum := 0.0
			for id, w := range tt.want {
				if math.Abs(got[id]-w) > 1e-9 {
					t.Errorf("fairShares(%v)[%s] = %v, want %v", tt.wants, id, got[id], w)
				}
				sum += got[id]
			}
			if sum > 1+1e-9 {
				t.Errorf("fairShares(%v) gives out %v of the quota", tt.wants, sum)
			}
		})
	}
}

func TestWant(t *testing.T) {
	t.Parallel()
	quota := Limits{TPM: 10_000, RPM: 100}
	tests := []struct {
		name string
		u    Usage
		want float64
	}{
		{"idle asks for room for a first request", Usage{}, minWant},
		{"tokens bind", Usage{Tokens: 2000, QueuedTokens: 2000, Requests: 4}, 0.5},
		{"requests bind", Usage{Tokens: 100, Requests: 40, QueuedRequests: 8}, 0.6},
	}
	for _, tt := range tests {
		if got := want(tt.u, quota); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: want(%+v) = %v, want %v", tt.name, tt.u, got, tt.want)
		}
	}
}

func TestPool_TidyAndCool(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	p := Pool{Members: map[string]Lease{
		"live":    {TPM: 100, RPM: 1, Expires: now.Add(time.Second)},
		"expired": {TPM: 300, RPM: 3, Expires: now.Add(-time.Second)},
	}}
	p.cool(Step{At: now.Add(1500 * time.Millisecond), TPM: 10})
	p.cool(Step{At: now.Add(1800 * time.Millisecond), TPM: 5, RPM: 1}) // the same second: merged
	p.cool(Step{At: now.Add(-time.Second), TPM: 1000})                 // over
	p.tidy(now, time.Minute)
	if _, ok := p.Members["expired"]; ok || len(p.Members) != 1 {
		t.Fatalf("members after tidy: %v", p.Members)
	}
	want := []Step{{At: now.Add(2 * time.Second), TPM: 15, RPM: 1}, {At: now.Add(59 * time.Second), TPM: 300, RPM: 3}}
	if len(p.Cooling) != len(want) {
		t.Fatalf("cooling %v, want %v", p.Cooling, want)
	}
	for i := range want {
		if !p.Cooling[i].At.Equal(want[i].At) || p.Cooling[i].TPM != want[i].TPM || p.Cooling[i].RPM != want[i].RPM {
			t.Errorf("cooling[%d] = %+v, want %+v", i, p.Cooling[i], want[i])
		}
	}
	if h := p.held("live"); h != (Limits{TPM: 315, RPM: 4}) {
		t.Errorf("held but for live = %+v, want {315 4}", h)
	}
	if h := p.held("other"); h != (Limits{TPM: 415, RPM: 5}) {
		t.Errorf("held but for other = %+v, want {415 5}", h)
	}
}
