package catalog_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/catalog"
)

func TestParse_ShippedFile(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../models.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Parse(b)
	if err != nil {
		t.Fatalf("Parse(models.json) = %v", err)
	}
	if got := strings.Join(c.Names(), ","); got != "embed,extract,ingest,summarize" {
		t.Errorf("Names() = %s", got)
	}
	// The simulator's default deployments (internal/local/aoaisim DefaultDeployments)
	// are the ones make run serves, so the shipped catalog names them.
	want := map[string]catalog.Path{"gpt-4o-mini": catalog.Queue, "text-embedding-3-small": catalog.Queue, "gpt-4o-mini-batch": catalog.Batch}
	got := c.Deployments()
	for name, path := range want {
		if got[name] != path {
			t.Errorf("Deployments()[%q] = %q, want %q", name, got[name], path)
		}
	}
	p, err := c.Price("summarize", catalog.Batch, "gpt-4o-mini-batch")
	if err != nil || p.Input.String() != "0.075" || p.Output.String() != "0.3" {
		t.Errorf("Price(summarize, batch) = %+v, %v", p, err)
	}
	if _, err := c.Price("summarize", catalog.Queue, "gpt-4o-mini-batch"); !errors.Is(err, catalog.ErrUnknown) {
		t.Errorf("Price(batch deployment on queue path) = %v, want ErrUnknown", err)
	}
	ingest, ok := c.Alias("ingest")
	if !ok || ingest.Queue == nil || ingest.Embedding == nil || ingest.Queue.Name != "gpt-4o-mini" || ingest.Embedding.Name != "text-embedding-3-small" {
		t.Errorf("Alias(ingest) = %+v, want gpt-4o-mini beside the embedding deployment text-embedding-3-small", ingest)
	}
	if p, err := c.Price("ingest", catalog.Queue, "text-embedding-3-small"); err != nil || p.Input.String() != "0.02" {
		t.Errorf("Price(ingest, queue, embedding deployment) = %+v, %v", p, err)
	}
	if _, err := c.Price("nope", catalog.Queue, "gpt-4o-mini"); !errors.Is(err, catalog.ErrUnknown) {
		t.Errorf("Price(unknown alias) = %v, want ErrUnknown", err)
	}
}

func TestParse_NamesEveryBadField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"not json", `{`, []string{"models: unexpected EOF"}},
		{"no version", `{"aliases":{"a1":{"queue":{"deployment":"d1","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":1}}}}}`, []string{"version: is required"}},
		{"future version", `{"version":2,"aliases":{}}`, []string{"version: is 2", "aliases: must name at least one alias"}},
		{"unknown top-level field", `{"version":1,"aliases":{},"extra":1}`, []string{`models: unknown field "extra"`}},
		{"unknown price field", `{"version":1,"aliases":{"summarize":{"batch":[{"deployment":"b1","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":1,"outptu":2}}]}}}`,
			[]string{`aliases.summarize.batch[0].price: unknown field "outptu"`}},
		{"wrong type", `{"version":1,"aliases":{"summarize":{"queue":{"deployment":5,"price":{}}}}}`, []string{"aliases.summarize.queue.deployment: is number, want string"}},
		{"bad alias name", `{"version":1,"aliases":{"Sum marize":{"queue":{"deployment":"d1","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":1}}}}}`, []string{"aliases.Sum marize: alias names"}},
		{"no deployments", `{"version":1,"aliases":{"summarize":{"description":"x"}}}`, []string{"aliases.summarize: needs a queue deployment"}},
		{"missing and bad prices", `{"version":1,"aliases":{"summarize":{"queue":{"deployment":"d/1","price":{"input_per_1m":0,"output_per_1m":-1}}}}}`,
			[]string{"aliases.summarize.queue.deployment:", "aliases.summarize.queue.price.input_per_1m: must be > 0", "aliases.summarize.queue.price.cached_input_per_1m: is required", "aliases.summarize.queue.price.output_per_1m: must be ≥ 0"}},
		{"too many decimals", `{"version":1,"aliases":{"summarize":{"queue":{"deployment":"d1","price":{"input_per_1m":0.0000001,"cached_input_per_1m":0,"output_per_1m":1e3}}}}}`,
			[]string{"aliases.summarize.queue.price.input_per_1m: 0.0000001: must have at most 6 decimals", "aliases.summarize.queue.price.output_per_1m: 1e3"}},
		{"missing price", `{"version":1,"aliases":{"summarize":{"queue":{"deployment":"d1"}}}}`, []string{"aliases.summarize.queue.price: is required"}},
		{"batch dearer than queue", `{"version":1,"aliases":{"summarize":{
			"queue":{"deployment":"d1","price":{"input_per_1m":1,"cached_input_per_1m":0.5,"output_per_1m":2}},
			"batch":[{"deployment":"b1","price":{"input_per_1m":0.5,"cached_input_per_1m":0.25,"output_per_1m":3}},
			         {"deployment":"b1","price":{"input_per_1m":0.5,"cached_input_per_1m":0.25,"output_per_1m":1}}]}}}`,
			[]string{"aliases.summarize.batch[0].price.output_per_1m: must not exceed the queue deployment's price 2", `aliases.summarize.batch[1].deployment: "b1" is listed twice`}},
		{"cached dearer than input", `{"version":1,"aliases":{"summarize":{"queue":{"deployment":"d1","price":{"input_per_1m":1,"cached_input_per_1m":2,"output_per_1m":2}}}}}`,
			[]string{"aliases.summarize.queue.price.cached_input_per_1m: must not exceed input_per_1m"}},
		{"deployment on two paths", `{"version":1,"aliases":{
			"aa":{"queue":{"deployment":"d1","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":1}}},
			"bb":{"batch":[{"deployment":"d1","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":1}}]}}}`,
			[]string{`aliases.bb.batch[0].deployment: "d1" serves the queue path at aliases.aa.queue`}},
		{"deployment at two prices", `{"version":1,"aliases":{
			"aa":{"queue":{"deployment":"d1","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":1}}},
			"bb":{"queue":{"deployment":"d1","price":{"input_per_1m":2,"cached_input_per_1m":0,"output_per_1m":1}}}}}`,
			[]string{`aliases.bb.queue.price: differs from the price of "d1" at aliases.aa.queue`}},
		{"embedding alone, and on the batch path elsewhere", `{"version":1,"aliases":{
			"aa":{"embedding":{"deployment":"e1","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":0}}},
			"bb":{"batch":[{"deployment":"e1","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":0}}]}}}`,
			[]string{"aliases.aa.embedding: needs a queue deployment beside it", `aliases.bb.batch[0].deployment: "e1" serves the queue path at aliases.aa.embedding`}},
		{"bad batch scheduling fields", `{"version":1,"aliases":{"aa":{"batch":[
			{"deployment":"b1","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":1},"enqueued_token_quota":-5,"data_zone":"EU","weight":0},
			{"deployment":"b2","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":1},"enqueued_token_quota":1.5,"weight":1001}]}}}`,
			[]string{"aliases.aa.batch[0].enqueued_token_quota: -5: must be", "aliases.aa.batch[0].data_zone: must be 2 to 16 lowercase letters",
				"aliases.aa.batch[0].weight: 0: must be", "aliases.aa.batch[1].enqueued_token_quota: 1.5", "aliases.aa.batch[1].weight: 1001"}},
		{"scheduling field on a queue deployment", `{"version":1,"aliases":{"aa":{"queue":{"deployment":"d1","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":1},"data_zone":"eu"}}}}`,
			[]string{`aliases.aa.queue: unknown field "data_zone"`}},
		{"batch deployment with two quotas", `{"version":1,"aliases":{
			"aa":{"batch":[{"deployment":"b1","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":1},"enqueued_token_quota":100}]},
			"bb":{"batch":[{"deployment":"b1","price":{"input_per_1m":1,"cached_input_per_1m":0,"output_per_1m":1},"enqueued_token_quota":200}]}}}`,
			[]string{`aliases.bb.batch[0].deployment: "b1" has another enqueued_token_quota, data_zone or weight at aliases.aa.batch[0]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := catalog.Parse([]byte(tt.doc))
			if err == nil {
				t.Fatal("Parse() = nil error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse() error:\n%v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	good := map[string]int64{"0": 0, "0.075": 75_000, "2.5": 2_500_000, "10": 10_000_000, "0.000001": 1, ".5": 500_000, "0.0375": 37_500}
	for in, want := range good {
		if r, err := catalog.ParseRate(in); err != nil || int64(r) != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, r, err, want)
		}
	}
	for _, in := range []string{"", "1e3", "0.0000001", "abc", "1.2.3", "2000000", "1.-5", "+1"} {
		if r, err := catalog.ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) = %d, want an error", in, r)
		}
	}
}

func TestPrice_Cost(t *testing.T) {
	t.Parallel()
	// gpt-4o-mini standard: $0.15 input, $0.075 cached, $0.60 output per 1M.
	p := catalog.Price{Input: 150_000, CachedInput: 75_000, Output: 600_000}
	tests := []struct {
		name                       string
		prompt, cached, completion int64
		want                       catalog.Money
		dollars                    string
	}{
		{"one million each", 1_000_000, 0, 1_000_000, 750_000_000, "0.750000"},
		{"cached part of prompt", 1_000_000, 400_000, 0, 90_000_000 + 30_000_000, "0.120000"},
		{"cached over prompt is clamped", 10, 50, 0, 750, "0.000001"},
		{"one token rounds", 1, 0, 1, 150 + 600, "0.000001"},
		{"nothing", 0, 0, 0, 0, "0.000000"},
		{"negative counts cost nothing", -5, -1, -3, 0, "0.000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := p.Cost(tt.prompt, tt.cached, tt.completion)
			if got != tt.want || got.Dollars() != tt.dollars {
				t.Errorf("Cost(%d, %d, %d) = %d (%s), want %d (%s)", tt.prompt, tt.cached, tt.completion, got, got.Dollars(), tt.want, tt.dollars)
			}
		})
	}
	if got := catalog.Rate(60_000_000).Of(1 << 62); got <= 0 {
		t.Errorf("huge cost wrapped to %d", got)
	}
}

func TestMoney_Dollars(t *testing.T) {
	t.Parallel()
	for m, want := range map[catalog.Money]string{0: "0.000000", 499: "0.000000", 500: "0.000001", 1_234_567_890: "1.234568", -1_500: "-0.000002"} {
		if got := m.Dollars(); got != want {
			t.Errorf("Money(%d).Dollars() = %q, want %q", m, got, want)
		}
	}
}

func TestMoney_JSONRoundTrip(t *testing.T) {
	t.Parallel()
	for _, m := range []catalog.Money{0, 1000, 1_234_567_000, -2_000} {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back catalog.Money
		if err := json.Unmarshal(b, &back); err != nil || back != m {
			t.Errorf("round trip of %d via %s = %d, %v", m, b, back, err)
		}
	}
	var m catalog.Money
	for _, bad := range []string{`"1"`, `1e3`, `0.0000000001`, `abc`, `-`} {
		if err := json.Unmarshal([]byte(bad), &m); err == nil {
			t.Errorf("Unmarshal(%s) = %d, want an error", bad, m)
		}
	}
}

func TestAlias_BatchFor(t *testing.T) {
	t.Parallel()
	price := func(in, out string) string {
		return `"price":{"input_per_1m":` + in + `,"cached_input_per_1m":0,"output_per_1m":` + out + `}`
	}
	c, err := catalog.Parse([]byte(`{"version":1,"aliases":{"aa":{"batch":[
		{"deployment":"dear",` + price("0.2", "0.8") + `,"enqueued_token_quota":5000000},
		{"deployment":"cheap-eu",` + price("0.1", "0.4") + `,"data_zone":"eu"},
		{"deployment":"cheap-light",` + price("0.1", "0.4") + `},
		{"deployment":"cheap-heavy",` + price("0.1", "0.4") + `,"weight":5},
		{"deployment":"cheapest",` + price("0.05", "0.2") + `}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Alias("aa")
	names := func(ds []catalog.Deployment) string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Name)
		}
		return strings.Join(out, ",")
	}
	// Cheapest first; of equal prices, the heavier, then by name; a data
	// zone keeps only its own deployments, and no zone takes them all.
	if got := names(a.BatchFor("")); got != "cheapest,cheap-heavy,cheap-eu,cheap-light,dear" {
		t.Errorf("BatchFor(\"\") = %s", got)
	}
	if got := names(a.BatchFor("eu")); got != "cheap-eu" {
		t.Errorf("BatchFor(eu) = %s", got)
	}
	if got := names(a.BatchFor("us")); got != "" {
		t.Errorf("BatchFor(us) = %s, want none", got)
	}
	if d, _ := a.Deployment(catalog.Batch, "dear"); d.EnqueuedTokenQuota != 5_000_000 {
		t.Errorf("dear's quota = %d", d.EnqueuedTokenQuota)
	}
}
