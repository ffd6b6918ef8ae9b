package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/webhook"
)

func (c *cli) webhooks(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("webhooks: want set, show, events or delete")
	}
	svc, err := c.tableService()
	if err != nil {
		return err
	}
	store, tenants := tablestore.NewWebhooks(svc, ""), tablestore.NewTenants(svc, "")
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("webhooks "+sub, flag.ContinueOnError)
	fs.SetOutput(c.out)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, rest)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("webhooks %s: want a tenant id", sub)
	}
	id := pos[0]
	if _, err := tenants.Get(ctx, id); err != nil {
		return err
	}
	switch sub {
	case "set":
		if len(pos) != 2 {
			return errors.New("webhooks set: want TENANT URL")
		}
		ep, err := webhook.Register(id, pos[1], c.now(), c.rand)
		if err != nil {
			return err
		}
		if err := store.PutEndpoint(ctx, ep); err != nil {
			return err
		}
		fmt.Fprintf(c.out, "webhook of %s: %s\nsigning secret (shown once): %s\n", id, ep.URL, ep.Secret)
		return nil
	case "show":
		ep, err := store.Endpoint(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.out, "webhook of %s: %s (registered %s)\n", id, ep.URL, ep.Created.Format("2006-01-02 15:04:05Z"))
		return nil
	case "delete":
		if err := store.DeleteEndpoint(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(c.out, "webhook of %s deleted\n", id)
		return nil
	case "events":
		events, err := store.Events(ctx, id)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(c.out)
			for _, e := range events {
				if err := enc.Encode(map[string]any{"id": e.ID, "type": e.Type, "job": e.Job, "created": e.Created,
					"delivered": e.Delivered, "abandoned": e.Abandoned, "next_attempt": e.NextAttempt, "attempts": e.Attempts}); err != nil {
					return err
				}
			}
			return nil
		}
		for _, e := range events {
			state := "pending, next " + e.NextAttempt.Format("15:04:05Z")
			switch {
			case e.Delivered:
				state = "delivered"
			case e.Abandoned:
				state = "abandoned"
			}
			fmt.Fprintf(c.out, "%-48s %-16s %s\n", e.ID, e.Type, state)
			for _, a := range e.Attempts {
				fmt.Fprintf(c.out, "    %s  status %d  %s  %s\n", a.At.Format("2006-01-02 15:04:05Z"), a.Status, a.Duration, a.Error)
			}
		}
		return nil
	default:
		return fmt.Errorf("webhooks: unknown command %q", sub)
	}
}
