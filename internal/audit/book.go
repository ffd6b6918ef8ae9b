package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/batch"
	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/catalog"
	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/tenant"
)

// book reads an ended batch's output and error files, meters every line as
// the harvest does, and records the sum in the ledger under Unattributed
// (an orphan: under the tenant bookTo chooses, unit OrphanUnit).
// It returns rec marked booked. Files Azure no longer has are noted, not
// retried: what is gone cannot be read later either. Any other failure is
// returned, and the next run books again from the start: the ledger row's
// key comes from the batch id and the alias and deployment, which are
// recorded before the row is first written, so booking again rewrites the
// same row, never adds one, even if the input file is gone by then.
func (a *Auditor) book(ctx context.Context, r *run, b batch.AzureBatch, rec Record) (Record, error) {
	log := zerolog.Ctx(ctx)
	if rec.Deployment == "" {
		var err error
		if rec.Alias, rec.Deployment, rec.Note, err = a.attribute(ctx, b.InputFileID); err != nil {
			return rec, err
		}
		if rec.Tenant, err = a.bookTo(ctx, rec); err != nil {
			return rec, err
		}
		if err := a.o.Store.Put(ctx, rec); err != nil {
			return rec, fmt.Errorf("record the deployment: %w", err)
		}
	}
	alias, dep := rec.Alias, rec.Deployment
	var notes []string
	if rec.Note != "" {
		notes = append(notes, rec.Note)
	}
	pack := b.Metadata["tenant"] == batch.PackTenant
	shares := map[string]*share{}
	var unreadable int64
	files := 0
	for _, f := range []struct{ id, kind string }{{b.OutputFileID, "output"}, {b.ErrorFileID, "error"}} {
		if f.id == "" {
			continue
		}
		files++
		n, err := a.meter(ctx, f.id, pack, shares)
		if errors.Is(err, batch.ErrAzureNotFound) {
			notes = append(notes, f.kind+" file "+f.id+" is gone: its usage is unknown")
			continue
		}
		if err != nil {
			return rec, fmt.Errorf("read %s file %s: %w", f.kind, f.id, err)
		}
		unreadable += n
	}
	if files == 0 {
		notes = append(notes, "no output or error file: nothing ran")
	}
	if unreadable > 0 {
		notes = append(notes, fmt.Sprintf("%d unreadable lines not booked", unreadable))
	}

	unit, tenantID := LedgerUnit(b.ID), cmp.Or(rec.Tenant, Unattributed)
	if rec.Job != "" {
		unit = OrphanUnit(b.ID)
	}
	byTenant := map[string]ledger.Usage{}
	if pack {
		split, note, err := a.splitPack(ctx, shares)
		if err != nil {
			return rec, err
		}
		byTenant = split
		notes = append(notes, note)
	} else if s := shares[""]; s != nil {
		byTenant[tenantID] = s.usage
	}
	month := ledger.MonthOf(cmp.Or(b.CreatedAt, rec.CreatedAt, rec.AlertedAt))
	var total ledger.Usage
	var priceless bool
	tenants := slices.Sorted(maps.Keys(byTenant))
	for _, t := range tenants {
		e := ledger.Entry{Tenant: t, Month: month, Path: ledger.Batch, Unit: unit, Alias: alias, Deployment: dep, Usage: byTenant[t]}
		if alias != Unknown && e.Estimate(a.o.Catalog) != nil {
			priceless = true
		}
		total.Add(e.Usage)
		if e.Requests == 0 && e.PromptTokens == 0 && e.CompletionTokens == 0 {
			continue
		}
		if t == Unattributed {
			if err := a.ensureTenant(ctx, r); err != nil {
				return rec, err
			}
		}
		if err := a.o.Ledger.Record(ctx, e); err != nil {
			return rec, fmt.Errorf("record usage of %s: %w", t, err)
		}
	}
	if priceless {
		notes = append(notes, "no price: booked without a cost")
	}
	rec.BookedAt, rec.Status = r.inv.now, string(b.Status)
	rec.InputFileID, rec.OutputFileID, rec.ErrorFileID = b.InputFileID, b.OutputFileID, b.ErrorFileID
	rec.Alias, rec.Deployment, rec.Usage, rec.Note = alias, dep, total, strings.Join(notes, "; ")
	ev := log.Info()
	if rec.Note != "" || alias == Unknown {
		ev = log.Warn().Str("note", rec.Note)
	}
	if !pack {
		tenants = []string{tenantID}
	}
	ev.Str("status", rec.Status).Str("alias", alias).Str("deployment", dep).Str("month", month.String()).
		Int64("requests", total.Requests).Int64("refusals", total.Refusals).
		Int64("prompt_tokens", total.PromptTokens).Int64("completion_tokens", total.CompletionTokens).Int64("cost_nano_usd", int64(total.Cost)).
		Strs("booked_tenants", tenants).Str("unit", unit).Msg("usage of a batch no job claims booked")
	return rec, nil
}

// bookTo is the tenant an ended batch's usage goes to: for an orphan, the
// tenant its metadata names if it exists; else Unattributed. An orphaned
// pack (metadata tenant batch.PackTenant, no tenant's) goes to
// Unattributed, the tenant of its lines whose job is not found (the
// others go to their jobs' tenants, see splitPack).
func (a *Auditor) bookTo(ctx context.Context, rec Record) (string, error) {
	if rec.Job == "" || rec.Tenant == "" || rec.Tenant == Unattributed || rec.Tenant == batch.PackTenant {
		return Unattributed, nil
	}
	_, err := a.o.Tenants.Get(ctx, rec.Tenant)
	switch {
	case err == nil:
		return rec.Tenant, nil
	case errors.Is(err, tenant.ErrNotFound):
		return Unattributed, nil
	default:
		return "", fmt.Errorf("read tenant %s: %w", rec.Tenant, err)
	}
}

// share is the lines of a batch's files that name one job (or, for a
// batch that is not a pack, all of them), and their usage.
type share struct {
	lines int64
	usage ledger.Usage
}

// meter adds the usage of every line of an output or error file to
// shares, under the job its custom_id names when byJob is set (else, and
// for a line that names no job, under "") and returns how many lines
// could not be read. It keeps nothing of a line but its usage and
// outcome.
func (a *Auditor) meter(ctx context.Context, id string, byJob bool, shares map[string]*share) (unreadable int64, err error) {
	body, err := a.o.Azure.OpenFileContent(ctx, id)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	rd := batchfile.NewReader(body, 0)
	for {
		res, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return unreadable, nil
		}
		if errors.Is(err, batchfile.ErrMalformedLine) {
			unreadable++
			continue
		}
		if err != nil {
			return 0, err
		}
		var job string
		if ref, err := batchfile.ParseCustomID(res.CustomID); byJob && err == nil {
			job = ref.Job
		}
		s := shares[job]
		if s == nil {
			s = &share{}
			shares[job] = s
		}
		s.lines++
		batch.Meter(&s.usage, &res)
	}
}

// maxNoteNames bounds the tenants, and the jobs, an orphaned pack's note
// names.
const maxNoteNames = 20

// splitPack attributes an orphaned pack's lines: each line names its job
// (its custom_id), and the job rows outlive the pack's, so each line's
// usage goes to its job's tenant; the lines whose job is not found (or
// that name none) go to Unattributed. It returns the usage by tenant and
// a note saying how many lines of how many jobs went to each tenant, and
// which jobs were not found.
func (a *Auditor) splitPack(ctx context.Context, shares map[string]*share) (map[string]ledger.Usage, string, error) {
	owners, err := a.o.Jobs.Owners(ctx, slices.Collect(maps.Keys(shares)))
	if err != nil {
		return nil, "", fmt.Errorf("find the tenants of the pack's jobs: %w", err)
	}
	type sum struct {
		lines int64
		jobs  int
	}
	byTenant, sums := map[string]ledger.Usage{}, map[string]*sum{}
	lost := map[string]int64{}
	for job, s := range shares {
		t := owners[job]
		if t == "" || t == batch.PackTenant {
			t = Unattributed
			lost[job] = s.lines
		}
		u := byTenant[t]
		u.Add(s.usage)
		byTenant[t] = u
		if sums[t] == nil {
			sums[t] = &sum{}
		}
		sums[t].lines += s.lines
		sums[t].jobs++
	}
	var b strings.Builder
	b.WriteString("an offpath pack (several tenants' jobs in one batch) whose record is gone: its lines are booked to the tenants of the jobs they name:")
	tenants := slices.DeleteFunc(slices.Sorted(maps.Keys(sums)), func(t string) bool { return t == Unattributed })
	for k, t := range tenants {
		if k == maxNoteNames {
			fmt.Fprintf(&b, " and %d more tenants", len(tenants)-k)
			break
		}
		fmt.Fprintf(&b, " %s %d lines of %d jobs;", t, sums[t].lines, sums[t].jobs)
	}
	if len(tenants) == 0 {
		b.WriteString(" none;")
	}
	if len(lost) == 0 {
		b.WriteString(" every line's job found")
		return byTenant, b.String(), nil
	}
	fmt.Fprintf(&b, " %d lines whose job is not found to %s:", sums[Unattributed].lines, Unattributed)
	ids := slices.Sorted(maps.Keys(lost))
	for k, id := range ids {
		if k == maxNoteNames {
			fmt.Fprintf(&b, " and %d more jobs", len(ids)-k)
			break
		}
		fmt.Fprintf(&b, " %s (%d)", cmp.Or(id, "no job named"), lost[id])
	}
	return byTenant, b.String(), nil
}

// maxFirstLine bounds what is read of an input file to find its model.
const maxFirstLine = batchfile.DefaultMaxLineBytes

// attribute finds the alias and deployment a batch's usage is booked
// under, and a note on what could not be found.
func (a *Auditor) attribute(ctx context.Context, inputFileID string) (alias, dep, note string, err error) {
	dep, note, err = a.deployment(ctx, inputFileID)
	if err != nil {
		return "", "", "", err
	}
	if dep == "" {
		return Unknown, Unknown, note, nil
	}
	if alias = a.aliasOf(dep); alias == "" {
		return Unknown, dep, "deployment " + dep + " is not in the catalog", nil
	}
	return alias, dep, "", nil
}

// deployment reads the model of an input file's first line: in a Global
// Batch file, the deployment every line goes to. It returns "" and a note
// when the file is gone or says nothing usable.
func (a *Auditor) deployment(ctx context.Context, inputFileID string) (dep, note string, err error) {
	if inputFileID == "" {
		return "", "no input file: deployment unknown", nil
	}
	body, err := a.o.Azure.OpenFileContent(ctx, inputFileID)
	if errors.Is(err, batch.ErrAzureNotFound) {
		return "", "input file " + inputFileID + " is gone: deployment unknown", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("read input file %s: %w", inputFileID, err)
	}
	defer body.Close()
	var line struct {
		Body struct {
			Model string `json:"model"`
		} `json:"body"`
	}
	if err := json.NewDecoder(io.LimitReader(body, maxFirstLine)).Decode(&line); err != nil {
		return "", "input file's first line unreadable: deployment unknown", nil
	}
	if !catalog.ValidDeployment(line.Body.Model) {
		return "", "input file names no valid deployment", nil
	}
	return line.Body.Model, "", nil
}

// aliasOf returns the first alias, by name, whose batch deployments include
// dep, or "".
func (a *Auditor) aliasOf(dep string) string {
	if dep == "" {
		return ""
	}
	for _, al := range a.o.Catalog.Aliases() {
		if _, ok := al.Deployment(catalog.Batch, dep); ok {
			return al.Name
		}
	}
	return ""
}

// ensureTenant makes sure the Unattributed tenant exists, once per run, so
// that the admin's usage report can show it. It is created suspended,
// without keys, application ids or aliases: nobody can use it.
func (a *Auditor) ensureTenant(ctx context.Context, r *run) error {
	if r.tenantReady {
		return nil
	}
	t, err := a.o.Tenants.Get(ctx, Unattributed)
	switch {
	case err == nil:
		if t.State != tenant.Suspended || len(t.Keys) > 0 || len(t.AppIDs) > 0 {
			zerolog.Ctx(ctx).Warn().Str("tenant", Unattributed).
				Msg("the tenant that holds second-door usage can be used by someone; suspend it and remove its credentials")
		}
	case errors.Is(err, tenant.ErrNotFound):
		t = tenant.New(Unattributed, "Usage of batches offpath did not create", r.inv.now)
		t.State = tenant.Suspended
		if err := a.o.Tenants.Create(ctx, t); err != nil && !errors.Is(err, tenant.ErrConflict) {
			return fmt.Errorf("create tenant %s: %w", Unattributed, err)
		}
		zerolog.Ctx(ctx).Info().Str("tenant", Unattributed).Msg("tenant for second-door usage created, suspended")
	default:
		return fmt.Errorf("read tenant %s: %w", Unattributed, err)
	}
	r.tenantReady = true
	return nil
}
