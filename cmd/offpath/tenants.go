package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/tenant"
)

func (c *cli) tenants(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("tenants: want create, list, suspend, activate or rotate-key")
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "create":
		return c.createTenant(ctx, rest)
	case "list":
		return c.listTenants(ctx, rest)
	case "suspend":
		return c.setState(ctx, rest, tenant.Suspended)
	case "activate":
		return c.setState(ctx, rest, tenant.Active)
	case "rotate-key":
		return c.rotateKey(ctx, rest)
	default:
		return fmt.Errorf("tenants: unknown command %q", sub)
	}
}

func (c *cli) createTenant(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tenants create", flag.ContinueOnError)
	fs.SetOutput(c.out)
	name := fs.String("name", "", "display name")
	aliases := fs.String("aliases", "", "model aliases the tenant may use, comma-separated")
	budget := fs.Int64("budget", 0, "monthly token budget (0: none)")
	apps := fs.String("app-id", "", "Entra ID application ids that authenticate as the tenant, comma-separated")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	id, err := one(pos, "tenant id")
	if err != nil {
		return err
	}
	cat, err := c.catalog()
	if err != nil {
		return err
	}
	t := tenant.New(id, *name, c.now())
	t.Aliases, t.MonthlyTokenBudget, t.AppIDs = split(*aliases), *budget, split(*apps)
	for _, a := range t.Aliases {
		if _, ok := cat.Alias(a); !ok {
			return fmt.Errorf("alias %q is not in the model catalog (known: %s)", a, strings.Join(cat.Names(), ", "))
		}
	}
	key, _, err := t.RotateKey(c.rand, c.now(), 0)
	if err != nil {
		return err
	}
	if err := t.Validate(); err != nil {
		return err
	}
	tenants, _, err := c.stores()
	if err != nil {
		return err
	}
	if err := tenants.Create(ctx, t); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "created tenant %s\n\nAPI key (shown only now; store it safely):\n\n  %s\n\n", t.ID, key)
	return nil
}

func (c *cli) listTenants(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tenants list", flag.ContinueOnError)
	fs.SetOutput(c.out)
	asJSON := fs.Bool("json", false, "print JSON")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return fmt.Errorf("tenants list takes no arguments")
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
		type keyJSON struct {
			ID      string     `json:"id"`
			Created time.Time  `json:"created"`
			Expires *time.Time `json:"expires,omitempty"`
		}
		type tenantJSON struct {
			ID                 string       `json:"id"`
			DisplayName        string       `json:"display_name"`
			Aliases            []string     `json:"aliases"`
			MonthlyTokenBudget int64        `json:"monthly_token_budget"`
			State              tenant.State `json:"state"`
			AppIDs             []string     `json:"app_ids"`
			Keys               []keyJSON    `json:"keys"`
			Created            time.Time    `json:"created"`
		}
		out := []tenantJSON{}
		for _, t := range list {
			v := tenantJSON{t.ID, t.DisplayName, nonNil(t.Aliases), t.MonthlyTokenBudget, t.State, nonNil(t.AppIDs), []keyJSON{}, t.Created}
			for _, k := range t.Keys {
				kj := keyJSON{ID: k.ID, Created: k.Created}
				if !k.Expires.IsZero() {
					kj.Expires = &k.Expires
				}
				v.Keys = append(v.Keys, kj)
			}
			out = append(out, v)
		}
		enc := json.NewEncoder(c.out)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	g := &grid{right: []bool{false, false, false, false, true, false, true, false}}
	g.add("ID", "NAME", "STATE", "ALIASES", "MONTHLY BUDGET", "KEYS", "APP IDS", "CREATED")
	for _, t := range list {
		budget := "-"
		if t.MonthlyTokenBudget > 0 {
			budget = thousands(t.MonthlyTokenBudget)
		}
		g.add(t.ID, dash(t.DisplayName), string(t.State), dash(strings.Join(t.Aliases, ",")),
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
	id, err := one(args, "tenant id")
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
	fs := flag.NewFlagSet("tenants rotate-key", flag.ContinueOnError)
	fs.SetOutput(c.out)
	overlap := fs.Duration("overlap", tenant.DefaultOverlap, "how long the tenant's other keys keep working (0s: stop them now)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	id, err := one(pos, "tenant id")
	if err != nil {
		return err
	}
	tenants, _, err := c.stores()
	if err != nil {
		return err
	}
	var key string
	t, err := tenants.Update(ctx, id, func(t *tenant.Tenant) error {
		var err error
		key, _, err = t.RotateKey(c.rand, c.now(), *overlap)
		return err
	})
	if err != nil {
		return err
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
