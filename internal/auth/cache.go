package auth

import (
	"sync"
	"time"

	"github.com/offpath/offpath/internal/tenant"
)

// cache holds looked-up credentials of one kind (API keys, or Entra
// application ids). Credentials that exist and ids that do not are kept
// apart, each bounded on its own: only genuine credentials reach found, so
// a flood of made-up ids, which fills missing, cannot push them out.
//
// Every entry carries the generation it was read in (see epoch); an entry
// of an older generation is never used, which is how a change seen in the
// credential epoch reaches every cached credential at once, including one
// whose read was in flight when the change was seen.
type cache struct {
	max int

	mu      sync.Mutex
	found   map[string]foundEntry
	missing map[string]missingEntry
}

type foundEntry struct {
	cred tenant.Credential
	gen  uint64
	read time.Time
}

type missingEntry struct {
	gen   uint64
	until time.Time
}

// lookup is what the cache knows about an id.
type lookup int

const (
	notCached lookup = iota
	isFound
	isMissing
)

func newCache(max int) *cache {
	return &cache{max: max, found: map[string]foundEntry{}, missing: map[string]missingEntry{}}
}

// get answers from the cache: unknown ids first (they are what a flood
// presents), then credentials read in generation gen less than ttl ago.
func (c *cache) get(id string, gen uint64, now time.Time, ttl time.Duration) (tenant.Credential, lookup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.missing[id]; ok && m.gen == gen && now.Before(m.until) {
		return tenant.Credential{}, isMissing
	}
	if f, ok := c.found[id]; ok && f.gen == gen && now.Sub(f.read) < ttl {
		return f.cred, isFound
	}
	return tenant.Credential{}, notCached
}

func (c *cache) putFound(id string, cred tenant.Credential, gen uint64, read time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.missing, id)
	if _, ok := c.found[id]; !ok && len(c.found) >= c.max {
		clear(c.found) // more genuine credentials in use than max: start over
	}
	c.found[id] = foundEntry{cred: cred, gen: gen, read: read}
}

func (c *cache) putMissing(id string, gen uint64, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.found, id)
	if _, ok := c.missing[id]; !ok && len(c.missing) >= c.max {
		clear(c.missing) // a flood of made-up ids: forgetting them costs reads, which the failure limit bounds
	}
	c.missing[id] = missingEntry{gen: gen, until: until}
}

func (c *cache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.found)
	clear(c.missing)
}
