package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/api"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/tenant"
)

func (c *cli) tenants(ctx context.Context, args []string) error {
	return c.group("tenants", args, map[string]func([]string) error{
		"create":     func(a []string) error { return c.createTenant(ctx, a) },
		"list":       func(a []string) error { return c.listTenants(ctx, a) },
		"suspend":    func(a []string) error { return c.setState(ctx, a, tenant.Suspended) },
		"activate":   func(a []string) error { return c.setState(ctx, a, tenant.Active) },
		"rotate-key": func(a []string) error { return c.rotateKey(ctx, a) },
		"data-zone":  func(a []string) error { return c.setDataZone(ctx, a) },
	}, "create, list, suspend, activate, rotate-key, data-zone")
}

// issuedKey is a new API key as -json prints it.
type issuedKey struct {
	Tenant string `json:"tenant"`
	KeyID  string `json:"key_id"`
	Key    string `json:"key"`
	// OthersExpire is when the tenant's previous keys stop working.
	OthersExpire *time.Time `json:"others_expire,omitempty"`
	// OthersRevoked says the previous keys stopped now.
	OthersRevoked bool `json:"others_revoked,omitempty"`
}

func (c *cli) createTenant(ctx context.Context, args []string) error {
	fs := c.flags("tenants create", "ID [flags]", "Create a tenant and print its API key, once.")
	name := fs.String("name", "", "display name")
	aliases := fs.String("aliases", "", "model aliases the tenant may use, comma-separated")
	budget := fs.Int64("budget", 0, "monthly token budget (0: none)")
	apps := fs.String("app-id", "", "Entra ID application ids that authenticate as the tenant, comma-separated")
	zone := fs.String("data-zone", "", "data zone the tenant's batch work must stay in (e.g. eu; default: any)")
	asJSON := fs.Bool("json", false, "print the key as JSON")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	id, err := one(fs, pos, "tenant id")
	if err != nil {
		return err
	}
	cat, err := c.catalog()
	if err != nil {
		return err
	}
	t := tenant.New(id, *name, c.now())
	t.Aliases, t.MonthlyTokenBudget, t.AppIDs, t.DataZone = split(*aliases), *budget, split(*apps), *zone
	for _, a := range t.Aliases {
		if _, ok := cat.Alias(a); !ok {
			return usagef("alias %q is not in the model catalog (known: %s)", a, strings.Join(cat.Names(), ", "))
		}
	}
	key, k, err := t.RotateKey(c.rand, c.now(), 0)
	if err != nil {
		return err
	}
	if err := t.Validate(); err != nil {
		return usageError{err}
	}
	tenants, _, err := c.stores()
	if err != nil {
		return err
	}
	if err := tenants.Create(ctx, t); err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(issuedKey{Tenant: t.ID, KeyID: k.ID, Key: key})
	}
	fmt.Fprintf(c.out, "created tenant %s\n\nAPI key (shown only now; store it safely):\n\n  %s\n\n", t.ID, key)
	c.zoneNotes(cat, t)
	return nil
}

// setDataZone changes the data zone a tenant's batch work must stay in
// ("none": any). Jobs already submitted keep their deployments.
func (c *cli) setDataZone(ctx context.Context, args []string) error {
	fs := c.flags("tenants data-zone", "ID ZONE", "Keep the tenant's new batch jobs on deployments of data zone ZONE (none: any zone).")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("want a tenant id and a data zone (or none)")
	}
	id, zone := pos[0], pos[1]
	if zone == "none" {
		zone = ""
	}
	cat, err := c.catalog()
	if err != nil {
		return err
	}
	tenants, _, err := c.stores()
	if err != nil {
		return err
	}
	t, err := tenants.Update(ctx, id, func(t *tenant.Tenant) error {
		t.DataZone, t.Updated = zone, c.now().UTC()
		if err := t.Validate(); err != nil {
			return usageError{err}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "tenant %s: batch work in data zone %s (new jobs; jobs already submitted keep their deployments)\n", id, cmp.Or(zone, "any"))
	c.zoneNotes(cat, t)
	return nil
}

// zoneNotes says which of the tenant's aliases have batch deployments but
// none in its data zone: their batch jobs will be refused.
func (c *cli) zoneNotes(cat *catalog.Catalog, t tenant.Tenant) {
	if t.DataZone == "" {
		return
	}
	for _, name := range t.Aliases {
		if a, ok := cat.Alias(name); ok && len(a.BatchFor("")) > 0 && len(a.BatchFor(t.DataZone)) == 0 {
			fmt.Fprintf(c.out, "note: alias %s has no Global Batch deployment in data zone %s: the tenant's batch jobs on it will be refused\n", name, t.DataZone)
		}
	}
}

func (c *cli) listTenants(ctx context.Context, args []string) error {
	fs := c.flags("tenants list", "[-json]", "List the tenants, their states, budgets and keys (never a key's secret).")
	asJSON := fs.Bool("json", false, "print JSON")
	if pos, err := c.parse(fs, args); err != nil {
		return err
	} else if err := none(fs, pos, ""); err != nil {
		return err
	}
	tenants, _, err := c.stores()
	if err != nil {
		return err
	}
	list, err := tenants.List(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		out := []api.TenantView{}
		for _, t := range list {
			out = append(out, api.ViewTenant(t))
		}
		return c.printJSON(out)
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(c.out, "no tenants (offpath tenants create ID makes one)")
		return err
	}
	g := &grid{right: []bool{false, false, false, false, false, true, false, true, false}}
	g.add("ID", "NAME", "STATE", "ALIASES", "DATA ZONE", "MONTHLY BUDGET", "KEYS", "APP IDS", "CREATED")
	for _, t := range list {
		budget := "-"
		if t.MonthlyTokenBudget > 0 {
			budget = thousands(t.MonthlyTokenBudget)
		}
		g.add(t.ID, dash(t.DisplayName), string(t.State), dash(strings.Join(t.Aliases, ",")), dash(t.DataZone),
			budget, keysSummary(t.Keys, c.now()), fmt.Sprint(len(t.AppIDs)), t.Created.Format("2006-01-02"))
	}
	return g.write(c.out)
}

// keysSummary says how many keys work and when the next one stops.
func keysSummary(keys []tenant.Key, now time.Time) string {
	active, next := 0, time.Time{}
	for _, k := range keys {
		if !k.ActiveAt(now) {
			continue
		}
		active++
		if !k.Expires.IsZero() && (next.IsZero() || k.Expires.Before(next)) {
			next = k.Expires
		}
	}
	if next.IsZero() {
		return fmt.Sprint(active)
	}
	return fmt.Sprintf("%d (one expires %s)", active, next.UTC().Format("2006-01-02 15:04Z"))
}

func (c *cli) setState(ctx context.Context, args []string, state tenant.State) error {
	verb := map[tenant.State]string{tenant.Suspended: "suspend", tenant.Active: "activate"}[state]
	about := map[tenant.State]string{tenant.Suspended: "Refuse the tenant's requests (403).", tenant.Active: "Accept the tenant's requests again."}[state]
	fs := c.flags("tenants "+verb, "ID", about)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	id, err := one(fs, pos, "tenant id")
	if err != nil {
		return err
	}
	tenants, _, err := c.stores()
	if err != nil {
		return err
	}
	if _, err := tenants.Update(ctx, id, func(t *tenant.Tenant) error {
		t.State, t.Updated = state, c.now().UTC()
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "tenant %s is %s (running handlers apply it within their credential cache TTL, 30 s by default)\n", id, state)
	return nil
}

func (c *cli) rotateKey(ctx context.Context, args []string) error {
	fs := c.flags("tenants rotate-key", "ID [-overlap 24h] [-json]", "Issue a new API key; the tenant's other keys keep working for the overlap.")
	overlap := fs.Duration("overlap", tenant.DefaultOverlap, "how long the tenant's other keys keep working (0s: stop them now)")
	asJSON := fs.Bool("json", false, "print the key as JSON")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	id, err := one(fs, pos, "tenant id")
	if err != nil {
		return err
	}
	if *overlap < 0 {
		return usagef("-overlap %s: want 0s or more", *overlap)
	}
	if err != nil {
		return err
	}
	tenants, _, err := c.stores()
	if err != nil {
		return err
	}
	var (
		key string
		k   tenant.Key
	)
	t, err := tenants.Update(ctx, id, func(t *tenant.Tenant) error {
		var err error
		key, k, err = t.RotateKey(c.rand, c.now(), *overlap)
		return err
	})
	if err != nil {
		return err
	}
	if *asJSON {
		v := issuedKey{Tenant: id, KeyID: k.ID, Key: key, OthersRevoked: *overlap == 0}
		if *overlap > 0 && len(t.Keys) > 1 {
			until := c.now().Add(*overlap).UTC()
			v.OthersExpire = &until
		}
		return c.printJSON(v)
	}
	fmt.Fprintf(c.out, "new API key for %s (shown only now; store it safely):\n\n  %s\n\n", id, key)
	if *overlap == 0 {
		fmt.Fprintln(c.out, "the previous keys are revoked")
	} else if len(t.Keys) > 1 {
		fmt.Fprintf(c.out, "the previous keys work until %s\n", c.now().Add(*overlap).UTC().Format(time.RFC3339))
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
