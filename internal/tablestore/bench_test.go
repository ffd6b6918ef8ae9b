package tablestore_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/ledger"
	"github.com/offpath/offpath/internal/local/azurite"
	"github.com/offpath/offpath/internal/nightly"
	"github.com/offpath/offpath/internal/tablestore"
)

// rows returns n distinct entries of one tenant-month, with a prefix so
// that every benchmark iteration writes new rows.
func rows(prefix string, n int) []ledger.Entry {
	out := make([]ledger.Entry, n)
	for i := range out {
		out[i] = unit("contoso", "2026-11", fmt.Sprintf("%s/msg/%d", prefix, i), int64(100+i%50))
	}
	return out
}

// BenchmarkLedger_RecordBatch writes 10,000 rows of one tenant-month in
// transactions of 100, one at a time and four in flight.
func BenchmarkLedger_RecordBatch(b *testing.B) {
	const n = 10_000
	for _, parallel := range []int{1, 4} {
		b.Run(fmt.Sprintf("parallel=%d", parallel), func(b *testing.B) {
			l := tablestore.NewLedger(service(b), tablestore.LedgerOptions{Table: tableName(b, "led"), Parallel: parallel})
			ctx := context.Background()
			if err := l.Record(ctx, unit("contoso", "2026-11", "warm-up", 1)); err != nil {
				b.Fatal(err)
			}
			i := 0
			var total time.Duration
			for b.Loop() {
				entries := rows(fmt.Sprintf("it%d", i), n)
				i++
				start := time.Now()
				if err := l.RecordBatch(ctx, entries); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(n*i)/total.Seconds(), "rows/s")
		})
	}
}

// BenchmarkLedger_RecordSingle writes rows one request at a time, for
// comparison (1,000 rows per iteration: at one row per request, 10,000
// take a while).
func BenchmarkLedger_RecordSingle(b *testing.B) {
	const n = 1_000
	l := newLedger(b, nil)
	ctx := context.Background()
	if err := l.Record(ctx, unit("contoso", "2026-11", "warm-up", 1)); err != nil {
		b.Fatal(err)
	}
	i := 0
	var total time.Duration
	for b.Loop() {
		entries := rows(fmt.Sprintf("it%d", i), n)
		i++
		start := time.Now()
		for _, e := range entries {
			if err := l.Record(ctx, e); err != nil {
				b.Fatal(err)
			}
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(n*i)/total.Seconds(), "rows/s")
}

// BenchmarkLedger_MonthReport answers a tenant-month's usage report from
// its rollups, and shows that what it reads does not grow with the
// month's entries: over 10,000 and 100,000 ledger rows, and over rollups
// of 1,000,000 entries laid down beside a sample of 10,000 of their rows
// (the rollups are what Record keeps; the rows are only what Azurite has
// to filter). It reports the entities the report read (the month's
// rollups, 150 here: 5 aliases × 30 days, whatever the entries) and prints
// beside it:
//
//   - over 10,000 rows, the full scan of the same month's rows (one
//     partition query, paged by the service 1,000 rows at a time, summed:
//     how the report was answered before), which must agree with the
//     rollups. Azurite pages a query by filtering and sorting the whole
//     table again for each page, so a full scan grows with the square of
//     the rows (over 10,000 rows at load ≈ 35 it took 20 s); over more,
//     the rollups are checked against the sum of the entries laid down,
//     and TestLedger_RollupsMatchScan checks rollups against the scan
//     after every kind of write;
//   - an empty query of the rollup read's shape (the same partition, a
//     range of row keys holding no row): Azurite runs every query over
//     every row of the table (Azure Table Storage seeks the range in its
//     index), and this is that part of the rollup read's time, which the
//     row count sets and the rollups do not.
//
// The entries spread over 30 days and 5 lines; they are laid down directly
// in transactions of 100, on an Azurite of its own that keeps its data in
// memory (one that saves to disk slows past a few hundred thousand rows
// to ≈ 50 rows/s), and their rollups rebuilt from the rows (Rebuild, which
// scans) at 10,000, or computed from the entries (ledger.Roll) and written
// above.
func BenchmarkLedger_MonthReport(b *testing.B) {
	az := azurite.StartInMemory(b)
	svc, err := tablestore.NewServiceClient(tablestore.Connection{ConnectionString: az.ConnectionString()})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ entries, rows int }{{10_000, 10_000}, {100_000, 100_000}, {1_000_000, 10_000}} {
		b.Run(fmt.Sprintf("entries=%d/rows=%d", c.entries, c.rows), func(b *testing.B) {
			n := c.entries
			l := tablestore.NewLedger(svc, tablestore.LedgerOptions{Table: tableName(b, "led")})
			ctx := context.Background()
			m := mustMonth(b, "2026-11")
			aliases := []string{"summarize", "extract", "classify", "embed", "translate"}
			entries := rows("report", n)
			for i := range entries {
				entries[i].Alias = aliases[(i/30)%len(aliases)]
				entries[i].Unfinished = i%7 == 0
				entries[i].Recorded = m.Start().Add(time.Duration(i%30)*24*time.Hour + time.Duration(i)*time.Millisecond)
			}
			start := time.Now()
			if err := l.WriteRowsOnly(ctx, entries[:c.rows]); err != nil {
				b.Fatal(err)
			}
			b.Logf("%d rows laid down in %v", c.rows, time.Since(start).Round(time.Second))
			scanned := n <= 10_000
			var want ledger.Report
			best := time.Duration(-1)
			if scanned {
				entries = nil
				start = time.Now()
				if rep, err := l.Rebuild(ctx, "contoso", m); err != nil || rep.Rows != n || rep.Rollups != 150 {
					b.Fatalf("Rebuild = %+v, %v", rep, err)
				}
				b.Logf("rollups rebuilt from %d rows in %v", n, time.Since(start).Round(time.Millisecond))
				// The baseline: the full scan, three times, the best kept.
				best = 1 << 62
				for range 3 {
					start := time.Now()
					got, err := l.Month(ctx, "contoso", m)
					if err != nil {
						b.Fatal(err)
					}
					want = ledger.Summarize("contoso", m, got)
					best = min(best, time.Since(start))
				}
			} else {
				rolled := ledger.Roll(entries)
				if len(rolled) != 150 {
					b.Fatalf("%d rollups, want 150", len(rolled))
				}
				if err := l.WriteRollups(ctx, "contoso", m, rolled); err != nil {
					b.Fatal(err)
				}
				want = ledger.Summarize("contoso", m, entries)
				entries = nil
			}
			if want.Entries != n {
				b.Fatalf("the report to agree with sums %d entries, want %d", want.Entries, n)
			}
			// What the report reads: the entities its query returns.
			read, err := l.Rollups(ctx, "contoso", m)
			if err != nil || len(read) != 150 {
				b.Fatalf("the report's read returned %d entities, %v; want the 150 rollups", len(read), err)
			}
			// Azurite's share: the same query over a range with no row.
			empty := time.Duration(1 << 62)
			for range 5 {
				start := time.Now()
				if got, err := l.EmptyRange(ctx, "contoso", m); err != nil || got != 0 {
					b.Fatalf("empty range: %d rows, %v", got, err)
				}
				empty = min(empty, time.Since(start))
			}
			b.ResetTimer()
			for b.Loop() {
				r, err := l.Report(ctx, "contoso", m)
				if err != nil {
					b.Fatal(err)
				}
				if !reflect.DeepEqual(r, want) {
					b.Fatalf("rollups disagree with the rows:\n%+v\n%+v", r, want)
				}
			}
			per := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(len(read)), "entities-read")
			b.ReportMetric(float64(per.Microseconds())/1000, "rollup-ms")
			b.ReportMetric(float64(empty.Microseconds())/1000, "empty-query-ms")
			b.ReportMetric(float64(per-empty)/1e6, "rollup-minus-empty-ms")
			msg := fmt.Sprintf("%d entries (%d rows in the table): report %.1f ms reading %d entities, the empty query %.1f ms",
				n, c.rows, float64(per.Microseconds())/1000, len(read), float64(empty.Microseconds())/1000)
			if scanned {
				b.ReportMetric(float64(best.Microseconds())/1000, "scan-ms")
				b.ReportMetric(float64(best)/float64(per), "scan/rollup")
				msg += fmt.Sprintf("; the full scan %.0f ms (%.0f×)", float64(best.Microseconds())/1000, float64(best)/float64(per))
			}
			b.Log(msg)
		})
	}
}

// BenchmarkLedger_Totals is the budget check's read: the month's rollups.
func BenchmarkLedger_Totals(b *testing.B) {
	l := newLedger(b, nil)
	ctx := context.Background()
	if err := l.RecordBatch(ctx, rows("totals", 10_000)); err != nil {
		b.Fatal(err)
	}
	m := mustMonth(b, "2026-11")
	for b.Loop() {
		if u, err := l.Totals(ctx, "contoso", m); err != nil || u.Requests != 30_000 {
			b.Fatalf("Totals = %+v, %v", u, err)
		}
	}
}

// BenchmarkSummaries_Lookup looks up 5,000 ticket ids, half of them
// recorded, in the nightly sieve's batches of 500: the cost a night pays
// per ticket to tell new from unchanged.
func BenchmarkSummaries_Lookup(b *testing.B) {
	const n, batch = 5_000, 500
	s := tablestore.NewSummaries(service(b), tableName(b, "sum"))
	ctx := context.Background()
	var recorded []nightly.Submitted
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("T-%d", i)
		if i%2 == 0 {
			recorded = append(recorded, nightly.Submitted{ID: ids[i], Hash: "h"})
		}
	}
	if err := s.Record(ctx, "support", "job", recorded); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		found := 0
		for start := 0; start < n; start += batch {
			m, err := s.Lookup(ctx, "support", ids[start:start+batch])
			if err != nil {
				b.Fatal(err)
			}
			found += len(m)
		}
		if found != n/2 {
			b.Fatalf("found %d, want %d", found, n/2)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}
