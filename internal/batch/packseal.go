package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// sealPack fixes a pack's members as its admission begins (in the claim's
// conditional write, so that it orders with every member's leavePack):
// the part's size becomes that of the members still in it. It reports
// false when none is left; the part has then ended, with nothing sent.
func sealPack(j *Job, p *Part, now time.Time) bool {
	if !j.Pack.Sealed {
		j.Pack.Sealed = true
		p.Lines, p.Bytes, p.EstimatedTokens = 0, 0, 0
		for _, m := range j.Pack.live() {
			p.Lines, p.Bytes, p.EstimatedTokens = p.Lines+m.Lines, p.Bytes+m.Bytes, p.EstimatedTokens+m.Tokens
		}
		j.Items, j.EstimatedTokens = p.Lines, p.EstimatedTokens
	}
	if len(j.Pack.live()) == 0 {
		p.Status, p.AzureStatus, p.FinishedAt = PartDone, AzureCancelled, now
		return false
	}
	return true
}

// unsent reports whether a sealed pack is held with no batch that could
// hold its lines: pending, no create whose outcome is unknown, and no
// admission under way (its lease free). Its members may then still
// leave it, as before the seal.
func unsent(pk *Job, now time.Time) bool {
	p := &pk.Parts[0]
	return p.Status == PartPending && !p.MaybeCreated && p.BatchID == "" && (pk.Lease.Owner == "" || !now.Before(pk.Lease.Until))
}

// resealPack sizes a held pack again after a member left it after its
// seal: the part's size becomes that of the members still in it, and an
// input file already uploaded (with the member's lines) is given up, to
// be deleted, so that the next admission builds and uploads the file
// again without them.
func resealPack(pk *Job, p *Part) {
	if len(pk.Pack.live()) > 0 { // else the pack is cancelled: leavePack
		pk.Pack.Sealed = false
		sealPack(pk, p, time.Time{})
	}
	if p.InputFileID != "" {
		if !slices.Contains(pk.Cleanup, p.InputFileID) {
			pk.Cleanup = append(pk.Cleanup, p.InputFileID)
		}
		p.InputFileID = ""
	}
}

// buildPack writes the pack's input: its live members' own inputs one
// after the other, unchanged (every line keeps its job's custom_id). The
// same members always make the same bytes, so an upload an earlier
// admission may have made is found by name and size.
func (s *Service) buildPack(ctx context.Context, j *Job, p *Part) error {
	w, err := s.o.Blobs.Create(ctx, s.o.Containers.Inputs, p.InputBlob, nil)
	if err != nil {
		return fmt.Errorf("pack input: %w", err)
	}
	for _, m := range j.Pack.live() {
		r, _, err := s.o.Blobs.Open(ctx, s.o.Containers.Inputs, m.Input)
		if err == nil {
			_, err = io.Copy(w, r)
			r.Close()
		}
		if err != nil {
			w.Abort(err)
			return fmt.Errorf("pack input: member %s: %w", m.Job, err)
		}
	}
	if w.Size() != p.Bytes {
		err := fmt.Errorf("pack input: %d bytes written, members have %d", w.Size(), p.Bytes)
		w.Abort(err)
		return err
	}
	return w.Close()
}

// leavePack takes a cancelled job's part out of its pack, if the pack is
// not sealed yet, or sealed and held with nothing sent that could hold
// its lines (unsent): its lines will not be in the file; a pack whose
// batch may exist keeps them, and they run. The pack's row decides, by a conditional write,
// so that a pack being sealed and a member leaving it never both win.
// When every member still in a pack is cancelled, so is the pack. It
// reports whether the part left.
func (s *Service) leavePack(ctx context.Context, j *Job, part int) (bool, error) {
	packID := j.Parts[part].Pack
	pk, err := s.o.Jobs.Get(ctx, PackTenant, packID)
	if errors.Is(err, ErrNotFound) {
		return true, nil // never recorded: the part is in no file
	}
	if err != nil {
		return false, fmt.Errorf("read pack %s: %w", packID, err)
	}
	left := false
	_, err = s.update(ctx, pk, func(pk *Job) error {
		left = false
		changed := false
		for k := range pk.Pack.Members {
			m := &pk.Pack.Members[k]
			if m.Tenant != j.Tenant || m.Job != j.ID || m.Part != j.Parts[part].Index {
				continue
			}
			switch {
			case m.Removed:
				left = true
			case !pk.Pack.Sealed:
				m.Removed, left, changed = true, true, true
			case unsent(pk, s.now()):
				m.Removed, left, changed = true, true, true
				resealPack(pk, &pk.Parts[0])
			case !m.Cancelled:
				m.Cancelled, changed = true, true
			}
		}
		if !changed {
			return errSkip
		}
		all := true
		for _, m := range pk.Pack.live() {
			all = all && m.Cancelled
		}
		if all && !pk.CancelRequested {
			pk.CancelRequested, pk.CancelRequestedAt = true, s.now()
		}
		return nil
	})
	return left, err
}

// leavePacks takes the job's packed parts out of their packs where they
// may still leave (see leavePack); it returns those that left, with their
// pack's id.
func (s *Service) leavePacks(ctx context.Context, j *Job) (map[int]string, error) {
	left := map[int]string{}
	for i := range j.Parts {
		p := &j.Parts[i]
		if p.Status != PartPending || p.Pack == "" {
			continue
		}
		ok, err := s.leavePack(ctx, j, i)
		if err != nil {
			return nil, fmt.Errorf("cancel job %s: %w", j.ID, err)
		}
		if ok {
			left[i] = p.Pack
		}
	}
	return left, nil
}
