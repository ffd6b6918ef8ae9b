package tokenmetrics

import (
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/ledger"
)

// JSONLines writes each sample as one JSON object per line.
type JSONLines struct {
	mu  sync.Mutex
	w   io.Writer
	log zerolog.Logger
}

// NewJSONLines writes samples to w; write errors are logged on log.
func NewJSONLines(w io.Writer, log zerolog.Logger) *JSONLines { return &JSONLines{w: w, log: log} }

// Emit writes the samples.
func (j *JSONLines) Emit(_ context.Context, samples []ledger.Sample) {
	var buf []byte
	for i := range samples {
		b, err := json.Marshal(&samples[i])
		if err != nil {
			j.log.Warn().Err(err).Msg("token metric not encoded")
			continue
		}
		buf = append(append(buf, b...), '\n')
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.w.Write(buf); err != nil {
		j.log.Warn().Err(err).Int("samples", len(samples)).Msg("token metrics not written")
	}
}

// ReadJSONLines decodes a stream written by JSONLines.
func ReadJSONLines(r io.Reader) ([]ledger.Sample, error) {
	var out []ledger.Sample
	dec := json.NewDecoder(r)
	for {
		var s ledger.Sample
		if err := dec.Decode(&s); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, err
		}
		out = append(out, s)
	}
}

// Multi emits to each of its sinks.
type Multi []ledger.Metrics

// Emit emits the samples to every sink.
func (m Multi) Emit(ctx context.Context, samples []ledger.Sample) {
	for _, s := range m {
		s.Emit(ctx, samples)
	}
}
