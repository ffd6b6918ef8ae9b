package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// The file's shape, decoded level by level so that an unknown or mistyped
// field is reported with its full path.
type (
	fileJSON struct {
		Version *int                       `json:"version"`
		Aliases map[string]json.RawMessage `json:"aliases"`
	}
	aliasJSON struct {
		Description string            `json:"description"`
		Queue       json.RawMessage   `json:"queue"`
		Embedding   json.RawMessage   `json:"embedding"`
		Batch       []json.RawMessage `json:"batch"`
	}
	deploymentJSON struct {
		Deployment string          `json:"deployment"`
		Price      json.RawMessage `json:"price"`
	}
	batchDeploymentJSON struct {
		deploymentJSON
		EnqueuedTokenQuota *json.Number `json:"enqueued_token_quota"`
		DataZone           string       `json:"data_zone"`
		Weight             *json.Number `json:"weight"`
	}
	priceJSON struct {
		Input       *json.Number `json:"input_per_1m"`
		CachedInput *json.Number `json:"cached_input_per_1m"`
		Output      *json.Number `json:"output_per_1m"`
	}
)

// Parse reads and validates a models.json document. The error lists every
// problem, one per line, each starting with its field path.
func Parse(b []byte) (*Catalog, error) {
	var p parser
	var f fileJSON
	if !p.decode(b, &f, "") {
		return nil, p.err()
	}
	switch {
	case f.Version == nil:
		p.add("version", "is required (%d)", Version)
	case *f.Version != Version:
		p.add("version", "is %d; this build reads version %d", *f.Version, Version)
	}
	if len(f.Aliases) == 0 {
		p.add("aliases", "must name at least one alias")
	}
	aliases := make(map[string]Alias, len(f.Aliases))
	for name, raw := range f.Aliases {
		if a, ok := p.alias(name, raw); ok {
			aliases[name] = a
		}
	}
	p.crossCheck(aliases)
	if err := p.err(); err != nil {
		return nil, err
	}
	return newCatalog(*f.Version, aliases), nil
}

type parser struct{ problems []string }

func (p *parser) add(path, format string, args ...any) {
	p.problems = append(p.problems, path+": "+fmt.Sprintf(format, args...))
}

func (p *parser) err() error {
	if len(p.problems) == 0 {
		return nil
	}
	slices.Sort(p.problems)
	return errors.New(strings.Join(p.problems, "\n"))
}

// decode decodes raw strictly into v, reporting problems at path.
func (p *parser) decode(raw []byte, v any, path string) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	err := dec.Decode(v)
	if err == nil && dec.Decode(new(json.RawMessage)) != io.EOF {
		err = errors.New("unexpected data after the object")
	}
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			msg = fmt.Sprintf("is %s, want %s", te.Value, te.Type)
			path = join(path, te.Field)
		}
		p.add(cmpPath(path), "%s", msg)
		return false
	}
	return true
}

func (p *parser) alias(name string, raw json.RawMessage) (Alias, bool) {
	path := "aliases." + name
	if !ValidAlias(name) {
		p.add(path, "alias names are 2 to 63 lowercase letters, digits and hyphens, starting with a letter")
	}
	var aj aliasJSON
	if !p.decode(raw, &aj, path) {
		return Alias{}, false
	}
	a := Alias{Name: name, Description: aj.Description}
	if len(aj.Description) > 500 {
		p.add(path+".description", "must be at most 500 bytes")
	}
	if len(aj.Queue) > 0 && string(aj.Queue) != "null" {
		if d, ok := p.deployment(aj.Queue, path+".queue"); ok {
			a.Queue = &d
		}
	}
	if len(aj.Embedding) > 0 && string(aj.Embedding) != "null" {
		if d, ok := p.deployment(aj.Embedding, path+".embedding"); ok {
			a.Embedding = &d
		}
		if a.Queue == nil {
			p.add(path+".embedding", "needs a queue deployment beside it (document ingestion embeds and summarises)")
		}
	}
	seen := map[string]bool{}
	for i, raw := range aj.Batch {
		dp := fmt.Sprintf("%s.batch[%d]", path, i)
		d, ok := p.batchDeployment(raw, dp)
		if !ok {
			continue
		}
		if seen[d.Name] {
			p.add(dp+".deployment", "%q is listed twice", d.Name)
		}
		seen[d.Name] = true
		if a.Queue != nil {
			p.cheaper(dp+".price", d.Price, a.Queue.Price)
		}
		a.Batch = append(a.Batch, d)
	}
	if a.Queue == nil && len(aj.Batch) == 0 {
		p.add(path, "needs a queue deployment, batch deployments, or both")
	}
	return a, true
}

// MaxWeight bounds a batch deployment's weight.
const MaxWeight = 1000

// batchDeployment reads a batch deployment: a deployment, and its
// enqueued-token quota, data zone and weight.
func (p *parser) batchDeployment(raw json.RawMessage, path string) (Deployment, bool) {
	var bj batchDeploymentJSON
	if !p.decode(raw, &bj, path) {
		return Deployment{}, false
	}
	d, ok := p.fields(bj.deploymentJSON, path)
	if n := bj.EnqueuedTokenQuota; n != nil {
		v, err := n.Int64()
		if err != nil || v < 0 {
			p.add(path+".enqueued_token_quota", "%s: must be a whole number of tokens ≥ 0", n.String())
		}
		d.EnqueuedTokenQuota = v
	}
	if z := bj.DataZone; z != "" {
		if !ValidDataZone(z) {
			p.add(path+".data_zone", "must be 2 to 16 lowercase letters (e.g. \"eu\", \"us\"), or absent for a Global Batch deployment")
		}
		d.DataZone = z
	}
	if n := bj.Weight; n != nil {
		v, err := n.Int64()
		if err != nil || v < 1 || v > MaxWeight {
			p.add(path+".weight", "%s: must be a whole number within 1..%d", n.String(), MaxWeight)
		}
		d.Weight = int(v)
	}
	return d, ok
}

// ValidDataZone reports whether s is acceptable as a data zone: 2 to 16
// lowercase letters.
func ValidDataZone(s string) bool {
	if len(s) < 2 || len(s) > 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

func (p *parser) deployment(raw json.RawMessage, path string) (Deployment, bool) {
	var dj deploymentJSON
	if !p.decode(raw, &dj, path) {
		return Deployment{}, false
	}
	return p.fields(dj, path)
}

func (p *parser) fields(dj deploymentJSON, path string) (Deployment, bool) {
	d := Deployment{Name: dj.Deployment}
	if !ValidDeployment(dj.Deployment) {
		p.add(path+".deployment", "must be an Azure OpenAI deployment name: 2 to 64 letters, digits, '.', '_' or '-'")
	}
	if len(dj.Price) == 0 || string(dj.Price) == "null" {
		p.add(path+".price", "is required")
		return d, false
	}
	var pj priceJSON
	if !p.decode(dj.Price, &pj, path+".price") {
		return d, false
	}
	d.Price.Input = p.rate(pj.Input, path+".price.input_per_1m", true)
	d.Price.CachedInput = p.rate(pj.CachedInput, path+".price.cached_input_per_1m", false)
	d.Price.Output = p.rate(pj.Output, path+".price.output_per_1m", false)
	if d.Price.CachedInput > d.Price.Input {
		p.add(path+".price.cached_input_per_1m", "must not exceed input_per_1m (%s)", d.Price.Input)
	}
	return d, true
}

func (p *parser) rate(n *json.Number, path string, positive bool) Rate {
	if n == nil {
		p.add(path, "is required (dollars per million tokens)")
		return 0
	}
	r, err := ParseRate(n.String())
	switch {
	case err != nil:
		p.add(path, "%s: %v", n.String(), err)
	case r < 0:
		p.add(path, "must be ≥ 0")
	case positive && r == 0:
		p.add(path, "must be > 0")
	}
	return r
}

// cheaper checks that a batch price does not exceed the queue price: Global
// Batch is discounted, so a higher batch price is a typo.
func (p *parser) cheaper(path string, batch, queue Price) {
	for _, c := range []struct {
		field      string
		batch, std Rate
	}{
		{"input_per_1m", batch.Input, queue.Input},
		{"cached_input_per_1m", batch.CachedInput, queue.CachedInput},
		{"output_per_1m", batch.Output, queue.Output},
	} {
		if c.batch > c.std {
			p.add(path+"."+c.field, "must not exceed the queue deployment's price %s (batch pricing is discounted)", c.std)
		}
	}
}

// crossCheck checks what spans aliases: a deployment serves one path only,
// at one price (and, for batch, with one quota, data zone and weight).
func (p *parser) crossCheck(aliases map[string]Alias) {
	type use struct {
		path, name string
		kind       Path
		price      Price
		dep        Deployment
	}
	first := map[string]use{}
	for _, alias := range slices.Sorted(maps.Keys(aliases)) {
		a := aliases[alias]
		var uses []use
		if a.Queue != nil {
			uses = append(uses, use{"aliases." + alias + ".queue", a.Queue.Name, Queue, a.Queue.Price, *a.Queue})
		}
		if a.Embedding != nil {
			uses = append(uses, use{"aliases." + alias + ".embedding", a.Embedding.Name, Queue, a.Embedding.Price, *a.Embedding})
		}
		for i, d := range a.Batch {
			uses = append(uses, use{fmt.Sprintf("aliases.%s.batch[%d]", alias, i), d.Name, Batch, d.Price, d})
		}
		for _, u := range uses {
			f, ok := first[u.name]
			switch {
			case !ok:
				first[u.name] = u
			case f.kind != u.kind:
				p.add(u.path+".deployment", "%q serves the %s path at %s; a deployment serves one path", u.name, f.kind, f.path)
			case f.price != u.price:
				p.add(u.path+".price", "differs from the price of %q at %s", u.name, f.path)
			case f.dep.EnqueuedTokenQuota != u.dep.EnqueuedTokenQuota || f.dep.DataZone != u.dep.DataZone || f.dep.Weight != u.dep.Weight:
				p.add(u.path+".deployment", "%q has another enqueued_token_quota, data_zone or weight at %s; a deployment has one of each", u.name, f.path)
			}
		}
	}
}

// ValidAlias reports whether s is acceptable as an alias name: 2 to 63
// lowercase letters, digits and hyphens, starting with a letter.
func ValidAlias(s string) bool {
	if len(s) < 2 || len(s) > 63 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// ValidDeployment reports whether s is acceptable as an Azure OpenAI
// deployment name: 2 to 64 letters, digits, '.', '_' or '-'.
func ValidDeployment(s string) bool {
	if len(s) < 2 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func cmpPath(path string) string {
	if path == "" {
		return "models"
	}
	return path
}
