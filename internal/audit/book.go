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
	var u ledger.Usage
	var unreadable int64
	var members map[string]int64 // a pack's lines by the job they name
	if b.Metadata["tenant"] == batch.PackTenant {
		members = map[string]int64{}
	}
	files := 0
	for _, f := range []struct{ id, kind string }{{b.OutputFileID, "output"}, {b.ErrorFileID, "error"}} {
		if f.id == "" {
			continue
		}
		files++
		n, err := a.meter(ctx, f.id, &u, members)
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
	if members != nil {
		notes = append(notes, packNote(members))
	}
	if unreadable > 0 {
		notes = append(notes, fmt.Sprintf("%d unreadable lines not booked", unreadable))
	}

	unit, tenantID := LedgerUnit(b.ID), cmp.Or(rec.Tenant, Unattributed)
	if rec.Job != "" {
		unit = OrphanUnit(b.ID)
	}
	e := ledger.Entry{Tenant: tenantID, Month: ledger.MonthOf(cmp.Or(b.CreatedAt, rec.CreatedAt, rec.AlertedAt)), Path: ledger.Batch,
		Unit: unit, Alias: alias, Deployment: dep, Usage: u}
	if alias != Unknown {
		if err := e.Estimate(a.o.Catalog); err != nil {
			notes = append(notes, "no price: booked without a cost")
		}
	}
	if e.Requests > 0 || e.PromptTokens > 0 || e.CompletionTokens > 0 {
		if tenantID == Unattributed {
			if err := a.ensureTenant(ctx, r); err != nil {
				return rec, err
			}
		}
		if err := a.o.Ledger.Record(ctx, e); err != nil {
			return rec, fmt.Errorf("record usage: %w", err)
		}
	}
	rec.BookedAt, rec.Status = r.inv.now, string(b.Status)
	rec.InputFileID, rec.OutputFileID, rec.ErrorFileID = b.InputFileID, b.OutputFileID, b.ErrorFileID
	rec.Alias, rec.Deployment, rec.Usage, rec.Note = alias, dep, e.Usage, strings.Join(notes, "; ")
	ev := log.Info()
	if rec.Note != "" || alias == Unknown {
		ev = log.Warn().Str("note", rec.Note)
	}
	ev.Str("status", rec.Status).Str("alias", alias).Str("deployment", dep).Str("month", e.Month.String()).
		Int64("requests", e.Requests).Int64("refusals", e.Refusals).
		Int64("prompt_tokens", e.PromptTokens).Int64("completion_tokens", e.CompletionTokens).Int64("cost_nano_usd", int64(e.Cost)).
		Str("booked_tenant", tenantID).Str("unit", unit).Msg("usage of a batch no job claims booked")
	return rec, nil
}

// bookTo is the tenant an ended batch's usage goes to: for an orphan, the
// tenant its metadata names if it exists; else Unattributed. An orphaned
// pack (metadata tenant batch.PackTenant, no tenant's) goes to
// Unattributed: its lines are several tenants' jobs', which only its lost
// row listed; the record's note names the jobs its lines are of.
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

// meter adds the usage of every line of an output or error file to u and
// returns how many lines could not be read. It keeps nothing of a line
// but its usage and outcome, and, when jobs is set, counts the lines of
// each offpath job a custom_id names.
func (a *Auditor) meter(ctx context.Context, id string, u *ledger.Usage, jobs map[string]int64) (unreadable int64, err error) {
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
		batch.Meter(u, &res)
		if ref, err := batchfile.ParseCustomID(res.CustomID); jobs != nil && err == nil {
			jobs[ref.Job]++
		}
	}
}

// maxPackNoteJobs bounds the jobs an orphaned pack's note names.
const maxPackNoteJobs = 20

// packNote says what an orphaned pack is and which jobs its lines are
// of, with their line counts (the first maxPackNoteJobs, by id).
func packNote(jobs map[string]int64) string {
	ids := slices.Sorted(maps.Keys(jobs))
	var b strings.Builder
	b.WriteString("an offpath pack (several tenants' jobs in one batch) whose record is gone: booked whole to " + Unattributed +
		", to be attributed by hand; its lines are of jobs")
	for k, id := range ids {
		if k == maxPackNoteJobs {
			fmt.Fprintf(&b, " and %d more", len(ids)-k)
			break
		}
		fmt.Fprintf(&b, " %s (%d)", id, jobs[id])
	}
	return b.String()
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
