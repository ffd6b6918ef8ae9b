package main

import (
	"fmt"
	"strconv"

	"github.com/offpath/offpath/internal/auth"
)

func (c *cli) listModels(args []string) error {
	fs := c.flags("models", "[-json]", "List the model aliases, their deployments and prices (the -models file, $OFFPATH_MODELS, or the catalog built in).")
	asJSON := fs.Bool("json", false, "print JSON")
	if pos, err := c.parse(fs, args); err != nil {
		return err
	} else if err := none(fs, pos, ""); err != nil {
		return err
	}
	cat, err := c.catalog()
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(cat.Aliases())
	}
	g := &grid{right: []bool{false, false, false, true, true, true, true, false, true, false}}
	g.add("ALIAS", "PATH", "DEPLOYMENT", "INPUT $/1M", "CACHED $/1M", "OUTPUT $/1M", "ENQUEUED QUOTA", "ZONE", "WEIGHT", "DESCRIPTION")
	for _, a := range cat.Aliases() {
		desc := a.Description
		if a.Queue != nil {
			p := a.Queue.Price
			g.add(a.Name, "queue", a.Queue.Name, p.Input.String(), p.CachedInput.String(), p.Output.String(), "", "", "", desc)
			desc = ""
		}
		if a.Embedding != nil {
			p := a.Embedding.Price
			g.add(a.Name, "queue", a.Embedding.Name, p.Input.String(), p.CachedInput.String(), p.Output.String(), "", "", "", "(embeddings) "+desc)
			desc = ""
		}
		// In the order the scheduler prefers them.
		for _, d := range a.BatchFor("") {
			quota, zone, weight := "-", "global", "1"
			if d.EnqueuedTokenQuota > 0 {
				quota = thousands(d.EnqueuedTokenQuota)
			}
			if d.DataZone != "" {
				zone = d.DataZone
			}
			if d.Weight > 0 {
				weight = strconv.Itoa(d.Weight)
			}
			g.add(a.Name, "batch", d.Name, d.Price.Input.String(), d.Price.CachedInput.String(), d.Price.Output.String(), quota, zone, weight, desc)
			desc = ""
		}
	}
	return g.write(c.out)
}

func (c *cli) adminKey(args []string) error {
	fs := c.flags("admin-key", "", "Make an admin key for the REST API, and the digest to set as OFFPATH_ADMIN_KEY_SHA256.")
	if pos, err := c.parse(fs, args); err != nil {
		return err
	} else if err := none(fs, pos, ""); err != nil {
		return err
	}
	key, digest, err := auth.NewAdminKey(c.rand)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "admin key (shown only now; give it to the operators who administer tenants):\n\n  %s\n\n"+
		"app setting for the handler (it stores only the digest; add it after a comma to rotate):\n\n  OFFPATH_ADMIN_KEY_SHA256=%s\n\n", key, digest)
	return nil
}
