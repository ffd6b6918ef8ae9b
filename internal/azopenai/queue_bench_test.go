package azopenai_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// BenchmarkClient measures calls per second against the simulator with
// rate limits and latency off, from 8 goroutines: the client's own cost
// (JSON, base64 vectors, HTTP on loopback) with the simulator's.
func BenchmarkClient(b *testing.B) {
	_, url := newQueueSim(b, nil)
	c := newClient(b, url, nil, nil)
	chunkText := strings.Repeat("A chunk of a document, about five hundred tokens long. ", 36) // ~2 KB
	batch := make([]string, 16)
	for i := range batch {
		batch[i] = chunkText
	}
	cases := []struct {
		name  string
		inner int // model inputs per call
		call  func(ctx context.Context) error
	}{
		{"summarize", 1, func(ctx context.Context) error {
			_, err := c.Summarize(ctx, chatDeployment, chunkText, 256)
			return err
		}},
		{"embed-1", 1, func(ctx context.Context) error {
			_, err := c.Embed(ctx, embedDeployment, batch[:1])
			return err
		}},
		{"embed-16", 16, func(ctx context.Context) error {
			_, err := c.Embed(ctx, embedDeployment, batch)
			return err
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.SetParallelism(4)
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if err := tc.call(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
			secs := time.Since(start).Seconds()
			b.ReportMetric(float64(b.N)/secs, "calls/s")
			if tc.inner > 1 {
				b.ReportMetric(float64(b.N*tc.inner)/secs, "inputs/s")
			}
		})
	}
}
