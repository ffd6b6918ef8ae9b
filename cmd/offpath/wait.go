package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/batch"
)

func (c *cli) waitBatch(ctx context.Context, args []string) error {
	fs := c.flags("batches wait", "ID [-interval 10s] [-timeout D] [-json]",
		"Follow a batch job until it is harvested: a progress bar on a terminal, a line per change otherwise.\n"+
			"Exits 0 when the job completed, 1 when it failed, expired or was cancelled (or on -timeout).")
	api := addAPIFlags(fs)
	interval := fs.Duration("interval", 10*time.Second, "how often to ask the API")
	timeout := fs.Duration("timeout", 0, "give up after this long (0: wait as long as the job takes)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	id, err := one(fs, pos, "job id")
	if err != nil {
		return err
	}
	if *interval <= 0 || *timeout < 0 {
		return usagef("batches wait: -interval must be positive and -timeout 0 or more")
	}
	client, err := c.client(api)
	if err != nil {
		return err
	}
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	p := progress{w: c.out, tty: isTerminal(c.out) && !*api.asJSON, quiet: *api.asJSON, now: c.now}
	for {
		var j job
		raw, err := client.call(ctx, "GET", jobPath(id), nil, &j)
		var f *apiFailure
		switch {
		case ctx.Err() != nil:
			p.end()
			return fmt.Errorf("batches wait %s: %w", id, ctx.Err())
		case errors.As(err, &f) && f.Status < 500:
			p.end()
			return err
		case err != nil:
			// A dependency blinked (503) or the connection broke: ask again.
			fmt.Fprintf(c.errOut, "offpath: %v (asking again)\n", err)
		default:
			p.show(&j)
			if j.State == batch.Harvested {
				p.end()
				return c.waited(&j, raw, *api.asJSON)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(*interval):
		}
	}
}

// waited reports the harvested job; an end other than completed is an error.
func (c *cli) waited(j *job, raw json.RawMessage, asJSON bool) error {
	if asJSON {
		if err := c.printRaw(raw); err != nil {
			return err
		}
	} else {
		o := j.Outcomes
		fmt.Fprintf(c.out, "job %s %s: %d ok, %d refused, %d failed, %d expired, %d cancelled; results: offpath batches results %s\n",
			j.ID, stateText(j), o.OK, o.Refused, o.Failed, o.Expired, o.Cancelled, j.ID)
	}
	if j.Final != batch.Completed {
		return fmt.Errorf("job %s ended %s", j.ID, j.Final)
	}
	return nil
}

// progress draws a job's progress: a bar redrawn in place on a terminal,
// else a plain line each time something changed.
type progress struct {
	w          io.Writer
	tty, quiet bool
	now        func() time.Time
	last       string
	drawn      bool
}

func (p *progress) show(j *job) {
	if p.quiet {
		return
	}
	line := progressLine(j, p.now())
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s %s", bar(j.done(), j.Items, 30), line)
		p.drawn = true
		return
	}
	// The deadline counts down every poll: a line per change of the rest.
	key, _, _ := strings.Cut(line, ", deadline")
	if key != p.last {
		fmt.Fprintf(p.w, "%s %s\n", p.now().UTC().Format(time.RFC3339), line)
		p.last = key
	}
}

// end moves past the bar.
func (p *progress) end() {
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// progressLine is the job's state, items done, parts' Azure status and the
// time to the deadline.
func progressLine(j *job, now time.Time) string {
	pct := 0
	if j.Items > 0 {
		pct = int(100 * j.done() / j.Items)
	}
	line := fmt.Sprintf("%s %s %d/%d items (%d%%)", j.ID, stateText(j), j.done(), j.Items, pct)
	var azure []string
	for _, part := range j.Parts {
		switch {
		case part.HeldReason != "":
			azure = append(azure, fmt.Sprintf("part %d held: %s", part.Index, part.HeldReason))
		case part.AzureStatus != "":
			azure = append(azure, fmt.Sprintf("part %d %s", part.Index, part.AzureStatus))
		}
	}
	if len(azure) > 0 {
		line += ", " + strings.Join(azure, ", ")
	}
	if j.ExpectedBy != nil && j.State != batch.Harvested {
		line += ", deadline in " + j.ExpectedBy.Sub(now).Round(time.Minute).String()
	}
	return line
}

// bar is a text progress bar of width cells.
func bar(done, total int64, width int) string {
	filled := 0
	if total > 0 {
		filled = int(int64(width) * min(done, total) / total)
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "]"
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
