package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/offpath/offpath/internal/tablestore"
	"github.com/offpath/offpath/internal/webhook"
)

func (c *cli) webhooks(ctx context.Context, args []string) error {
	return c.group("webhooks", args, map[string]func([]string) error{
		"set":    func(a []string) error { return c.setWebhook(ctx, a) },
		"show":   func(a []string) error { return c.showWebhook(ctx, a) },
		"events": func(a []string) error { return c.webhookEvents(ctx, a) },
		"delete": func(a []string) error { return c.deleteWebhook(ctx, a) },
	}, "set, show, events, delete")
}

// webhookStore connects to the webhooks and checks that tenant exists.
func (c *cli) webhookStore(ctx context.Context, tenantID string) (*tablestore.Webhooks, error) {
	conn, err := c.connection()
	if err != nil {
		return nil, err
	}
	svc, err := tablestore.NewServiceClient(conn)
	if err != nil {
		return nil, err
	}
	if _, err := tablestore.NewTenants(svc, "").Get(ctx, tenantID); err != nil {
		return nil, err
	}
	return tablestore.NewWebhooks(svc, ""), nil
}

// webhookCommand parses a webhooks command that takes one tenant id and
// connects to that tenant's webhooks.
func (c *cli) webhookCommand(ctx context.Context, fs *flag.FlagSet, args []string) (string, *tablestore.Webhooks, error) {
	pos, err := c.parse(fs, args)
	if err != nil {
		return "", nil, err
	}
	id, err := one(fs, pos, "tenant id")
	if err != nil {
		return "", nil, err
	}
	store, err := c.webhookStore(ctx, id)
	return id, store, err
}

func (c *cli) setWebhook(ctx context.Context, args []string) error {
	fs := c.flags("webhooks set", "TENANT URL", "Register the tenant's webhook (https) and print its signing secret (whsec_…), once.")
	asJSON := fs.Bool("json", false, "print the webhook and its secret as JSON")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("webhooks set: want TENANT URL, got %d arguments", len(pos))
	}
	id := pos[0]
	ep, err := webhook.Register(id, pos[1], c.now(), c.rand)
	if err != nil {
		return usageError{err}
	}
	store, err := c.webhookStore(ctx, id)
	if err != nil {
		return err
	}
	if err := store.PutEndpoint(ctx, ep); err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(map[string]any{"tenant": id, "url": ep.URL, "secret": ep.Secret})
	}
	fmt.Fprintf(c.out, "webhook of %s: %s\nsigning secret (shown once): %s\n", id, ep.URL, ep.Secret)
	return nil
}

func (c *cli) showWebhook(ctx context.Context, args []string) error {
	fs := c.flags("webhooks show", "TENANT", "Show the tenant's webhook URL (never its secret).")
	asJSON := fs.Bool("json", false, "print JSON")
	id, store, err := c.webhookCommand(ctx, fs, args)
	if err != nil {
		return err
	}
	ep, err := store.Endpoint(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(map[string]any{"tenant": id, "url": ep.URL, "created": ep.Created})
	}
	fmt.Fprintf(c.out, "webhook of %s: %s (registered %s)\n", id, ep.URL, ep.Created.Format("2006-01-02 15:04:05Z"))
	return nil
}

func (c *cli) deleteWebhook(ctx context.Context, args []string) error {
	fs := c.flags("webhooks delete", "TENANT", "Remove the tenant's webhook.")
	id, store, err := c.webhookCommand(ctx, fs, args)
	if err != nil {
		return err
	}
	if err := store.DeleteEndpoint(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "webhook of %s deleted\n", id)
	return nil
}

// webhookEvent is an event as -json prints it.
type webhookEvent struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Job         string `json:"job"`
	Created     any    `json:"created"`
	Delivered   bool   `json:"delivered"`
	Abandoned   bool   `json:"abandoned"`
	NextAttempt any    `json:"next_attempt"`
	Attempts    any    `json:"attempts"`
}

func (c *cli) webhookEvents(ctx context.Context, args []string) error {
	fs := c.flags("webhooks events", "TENANT", "The tenant's webhook events and every delivery attempt.")
	asJSON := fs.Bool("json", false, "print JSON")
	id, store, err := c.webhookCommand(ctx, fs, args)
	if err != nil {
		return err
	}
	events, err := store.Events(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		out := make([]webhookEvent, 0, len(events))
		for _, e := range events {
			out = append(out, webhookEvent{ID: e.ID, Type: e.Type, Job: e.Job, Created: e.Created,
				Delivered: e.Delivered, Abandoned: e.Abandoned, NextAttempt: e.NextAttempt, Attempts: e.Attempts})
		}
		return c.printJSON(out)
	}
	if len(events) == 0 {
		fmt.Fprintf(c.out, "no webhook events for %s\n", id)
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
}
