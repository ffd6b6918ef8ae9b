package catalog

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Version is the models.json format this package reads.
const Version = 1

// ErrUnknown: no such alias, or no such deployment for an alias on a path.
var ErrUnknown = errors.New("unknown model")

// Path is the way work reaches a model: the queue path (minutes, a standard
// deployment) or the batch path (hours, Global Batch deployments).
type Path string

// The paths.
const (
	Queue Path = "queue"
	Batch Path = "batch"
)

// ParsePath returns the Path named s.
func ParsePath(s string) (Path, error) {
	switch p := Path(s); p {
	case Queue, Batch:
		return p, nil
	}
	return "", fmt.Errorf("path %q: must be %q or %q", s, Queue, Batch)
}

// Deployment is an Azure OpenAI deployment and its price. A Global Batch
// deployment may also say how many tokens it lets wait (its enqueued-token
// quota), which data zone it keeps data in, and a weight that orders
// deployments of equal price.
type Deployment struct {
	Name  string `json:"deployment"`
	Price Price  `json:"price"`
	// EnqueuedTokenQuota is the deployment's enqueued-token limit, as
	// granted in Azure (0: not stated here; the OFFPATH_BATCH_QUOTA setting
	// or Azure's refusals decide).
	EnqueuedTokenQuota int64 `json:"enqueued_token_quota,omitempty"`
	// DataZone is where a Data Zone Batch deployment processes data ("eu",
	// "us"); empty for a Global Batch deployment, which may process it in
	// any region. A tenant that requires a data zone is only ever sent to
	// deployments of that zone.
	DataZone string `json:"data_zone,omitempty"`
	// Weight orders batch deployments of equal price: the higher first
	// (default 1).
	Weight int `json:"weight,omitempty"`
}

// BatchRank is the order in which the scheduler prefers batch deployments:
// the lower input plus output price per million tokens first, then the
// higher weight, then the name. It is the same for every alias, since a
// deployment has one price and one weight wherever it is listed.
func BatchRank(a, b Deployment) int {
	return cmp.Or(cmp.Compare(a.Price.Input+a.Price.Output, b.Price.Input+b.Price.Output),
		cmp.Compare(b.weight(), a.weight()), cmp.Compare(a.Name, b.Name))
}

func (d Deployment) weight() int {
	if d.Weight == 0 {
		return 1
	}
	return d.Weight
}

// InZone reports whether the deployment may serve a tenant that requires
// data zone zone ("" requires none).
func (d Deployment) InZone(zone string) bool { return zone == "" || d.DataZone == zone }

// BatchFor returns the alias's batch deployments that may serve a tenant
// requiring data zone zone, the preferred first (see BatchRank).
func (a *Alias) BatchFor(zone string) []Deployment {
	var out []Deployment
	for _, d := range a.Batch {
		if d.InZone(zone) {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, BatchRank)
	return out
}

// Alias is what tenants ask for: a name, and the deployments behind it.
type Alias struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Queue serves the queue path; nil if the alias is batch-only.
	Queue *Deployment `json:"queue,omitempty"`
	// Embedding is the embeddings deployment the queue path's document
	// ingestion uses beside Queue (which summarises); nil if the alias does
	// not ingest documents. It serves the queue path.
	Embedding *Deployment `json:"embedding,omitempty"`
	// Batch are the Global Batch deployments as listed; empty if the alias
	// is queue-only. The scheduler prefers them in BatchRank order.
	Batch []Deployment `json:"batch,omitempty"`
}

// Deployment returns the alias's deployment called name on path p.
func (a *Alias) Deployment(p Path, name string) (Deployment, bool) {
	switch p {
	case Queue:
		if a.Queue != nil && a.Queue.Name == name {
			return *a.Queue, true
		}
		if a.Embedding != nil && a.Embedding.Name == name {
			return *a.Embedding, true
		}
	case Batch:
		for _, d := range a.Batch {
			if d.Name == name {
				return d, true
			}
		}
	}
	return Deployment{}, false
}

// Catalog is the validated set of aliases. It is immutable once parsed and
// safe for concurrent use.
type Catalog struct {
	version int
	aliases map[string]Alias
	names   []string
}

// Aliases returns every alias, sorted by name.
func (c *Catalog) Aliases() []Alias {
	out := make([]Alias, 0, len(c.names))
	for _, n := range c.names {
		out = append(out, c.aliases[n])
	}
	return out
}

// Names returns the alias names, sorted.
func (c *Catalog) Names() []string { return slices.Clone(c.names) }

// Alias returns the alias called name.
func (c *Catalog) Alias(name string) (Alias, bool) {
	a, ok := c.aliases[name]
	return a, ok
}

// Price returns what deployment costs when alias is used on path p.
func (c *Catalog) Price(alias string, p Path, deployment string) (Price, error) {
	a, ok := c.aliases[alias]
	if !ok {
		return Price{}, fmt.Errorf("alias %q: %w", alias, ErrUnknown)
	}
	d, ok := a.Deployment(p, deployment)
	if !ok {
		return Price{}, fmt.Errorf("alias %q has no %s deployment %q: %w", alias, p, deployment, ErrUnknown)
	}
	return d.Price, nil
}

// Deployments returns every deployment name in the catalog, sorted, with
// the path it serves.
func (c *Catalog) Deployments() map[string]Path {
	out := map[string]Path{}
	for _, a := range c.aliases {
		if a.Queue != nil {
			out[a.Queue.Name] = Queue
		}
		if a.Embedding != nil {
			out[a.Embedding.Name] = Queue
		}
		for _, d := range a.Batch {
			out[d.Name] = Batch
		}
	}
	return out
}

func newCatalog(version int, aliases map[string]Alias) *Catalog {
	names := make([]string, 0, len(aliases))
	for n := range aliases {
		names = append(names, n)
	}
	sort.Strings(names)
	return &Catalog{version: version, aliases: aliases, names: names}
}

// Version returns the file format version the catalog was read from.
func (c *Catalog) Version() int { return c.version }
