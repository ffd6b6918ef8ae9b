package devhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/offpath/offpath/internal/ncrontab"
)

// hostsContainer is where the host keeps its own state (receipts, timer
// status) in the AzureWebJobsStorage account.
const hostsContainer = "azure-webjobs-hosts"

// timer runs one timerTrigger function on its schedule.
type timer struct {
	h            *Host
	fn           *Function
	schedule     ncrontab.Schedule
	runOnStartup bool
	useMonitor   bool
	mu           sync.Mutex // one invocation at a time, as the host's singleton lock
}

// scheduleStatus is the host's ScheduleStatus, persisted per function in
// azure-webjobs-hosts/timers/{hostId}/Host.Functions.{name}/status when
// useMonitor is on, so that a missed occurrence fires past due after a
// restart.
type scheduleStatus struct {
	Last        time.Time `json:"Last"`
	Next        time.Time `json:"Next"`
	LastUpdated time.Time `json:"LastUpdated"`
}

func (h *Host) prepareTimers() error {
	for _, fn := range h.app.Functions {
		t := fn.Trigger()
		if t.Type != "timerTrigger" {
			continue
		}
		expr := t.Schedule
		if len(expr) > 2 && expr[0] == '%' && expr[len(expr)-1] == '%' {
			expr = h.app.setting(expr[1 : len(expr)-1])
		}
		s, err := ncrontab.Parse(expr)
		if err != nil {
			return fmt.Errorf("function %s: schedule %q: %w", fn.Name, t.Schedule, err)
		}
		// useMonitor defaults to true for schedules of a minute or more; the
		// dev host keeps it simple and defaults to true.
		monitor := t.UseMonitor == nil || *t.UseMonitor
		h.timers[fn.Name] = &timer{h: h, fn: fn, schedule: s, runOnStartup: t.RunOnStartup, useMonitor: monitor}
	}
	return nil
}

// run fires the timer on schedule until ctx is done. A failed invocation is
// logged and the next occurrence fires anyway, as the host does.
func (t *timer) run(ctx context.Context) error {
	status, err := t.loadStatus(ctx)
	if err != nil {
		t.h.logger.Warn().Err(err).Str("function", t.fn.Name).Msg("timer status unreadable; starting afresh")
	}
	now := t.h.opts.Now().UTC()
	switch {
	case t.useMonitor && !status.Next.IsZero() && status.Next.Before(now):
		t.fire(ctx, true, status.Next) // missed while down: past due
	case t.runOnStartup:
		t.fire(ctx, false, now)
	}
	for {
		// Never before the occurrence just fired: a wake-up a hair early
		// must not fire the same occurrence twice.
		after := t.h.opts.Now()
		if status.Last.After(after) {
			after = status.Last
		}
		next := t.schedule.Next(after)
		if next.IsZero() {
			return fmt.Errorf("schedule %s never fires", t.schedule)
		}
		if err := t.saveStatus(ctx, scheduleStatus{Last: status.Last, Next: next, LastUpdated: t.h.opts.Now().UTC()}); err != nil {
			t.h.logger.Warn().Err(err).Str("function", t.fn.Name).Msg("timer status not saved")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(next)):
		}
		status = t.fire(ctx, false, next)
	}
}

// fire invokes the function once, with scheduled as ScheduleStatus.Last.
func (t *timer) fire(ctx context.Context, pastDue bool, scheduled time.Time) scheduleStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	status := scheduleStatus{Last: scheduled.UTC(), Next: t.schedule.Next(t.h.opts.Now()), LastUpdated: t.h.opts.Now().UTC()}
	env := newEnvelope(t.fn.Name, t.h.opts.Now())
	info := map[string]any{"Schedule": map[string]any{"AdjustForDST": true}, "IsPastDue": pastDue, "ScheduleStatus": nil}
	if t.useMonitor {
		info["ScheduleStatus"] = map[string]string{
			"Last":        status.Last.Format("2006-01-02T15:04:05.9999999Z07:00"),
			"Next":        status.Next.Format("2006-01-02T15:04:05.9999999Z07:00"),
			"LastUpdated": status.LastUpdated.Format("2006-01-02T15:04:05.9999999Z07:00"),
		}
	}
	env.Data[t.fn.Trigger().Name] = mustJSON(info)
	_, _ = t.h.execute(ctx, t.fn, env, nil, Event{})
	if err := t.saveStatus(ctx, status); err != nil {
		t.h.logger.Warn().Err(err).Str("function", t.fn.Name).Msg("timer status not saved")
	}
	return status
}

func (t *timer) statusBlob() string {
	return "timers/" + t.h.opts.HostID + "/Host.Functions." + t.fn.Name + "/status"
}

func (t *timer) loadStatus(ctx context.Context) (scheduleStatus, error) {
	var s scheduleStatus
	if !t.useMonitor {
		return s, nil
	}
	res, err := t.h.opts.blobs.DownloadStream(ctx, hostsContainer, t.statusBlob(), nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read timer status: %w", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return s, fmt.Errorf("read timer status: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("timer status: %w", err)
	}
	return s, nil
}

func (t *timer) saveStatus(ctx context.Context, s scheduleStatus) error {
	if !t.useMonitor {
		return nil
	}
	b := mustJSON(s)
	_, err := t.h.opts.blobs.UploadBuffer(ctx, hostsContainer, t.statusBlob(), b, nil)
	if bloberror.HasCode(err, bloberror.ContainerNotFound) {
		if _, cerr := t.h.opts.blobs.CreateContainer(ctx, hostsContainer, nil); cerr != nil && !bloberror.HasCode(cerr, bloberror.ContainerAlreadyExists) {
			return fmt.Errorf("create %s: %w", hostsContainer, cerr)
		}
		_, err = t.h.opts.blobs.UploadBuffer(ctx, hostsContainer, t.statusBlob(), b, nil)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("write timer status: %w", err)
	}
	return nil
}
