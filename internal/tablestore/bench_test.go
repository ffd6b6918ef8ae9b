package tablestore_test

import (
	"context"
	"flag"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/ledger"
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

// million adds a tenant-month of 1,000,000 rows to
// BenchmarkLedger_MonthReport, for a store that can hold them: Azurite
// keeps a table in memory and rewrites it whole to disk, so laying the
// rows down slows as the table grows (on a 2-core machine ≈ 300 rows/s at
// first, ≈ 50 rows/s past 450,000 rows).
var million = flag.Bool("million", false, "BenchmarkLedger_MonthReport also over 1,000,000 rows")

// BenchmarkLedger_MonthReport answers a tenant-month's usage report from
// its rollups, and prints beside it the full scan of the same month's rows
// (one partition query, paged by the service 1,000 rows at a time, summed:
// how the report was answered before), both checked to agree. The rows
// spread over 30 days and 5 lines (150 rollups); they are laid down
// directly and their rollups rebuilt from them, which is quicker than
// writing them one by one. With -million (go test … -args -million) it
// also runs over 1,000,000 rows, whose full scan it runs once, not three
// times.
func BenchmarkLedger_MonthReport(b *testing.B) {
	sizes := []int{10_000, 40_000}
	if *million {
		sizes = append(sizes, 1_000_000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			l := newLedger(b, nil)
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
			if err := l.WriteRowsOnly(ctx, entries); err != nil {
				b.Fatal(err)
			}
			entries = nil
			b.Logf("%d rows laid down in %v", n, time.Since(start).Round(time.Second))
			start = time.Now()
			if rep, err := l.Rebuild(ctx, "contoso", m); err != nil || rep.Rows != n || rep.Rollups != 150 {
				b.Fatalf("Rebuild = %+v, %v", rep, err)
			}
			b.Logf("rollups rebuilt from %d rows in %v", n, time.Since(start).Round(time.Millisecond))
			// The baseline: the full scan, three times (once over a
			// million rows), the best kept.
			var scan ledger.Report
			best := time.Duration(1 << 62)
			for range min(3, 3_000_000/n) {
				start := time.Now()
				got, err := l.Month(ctx, "contoso", m)
				if err != nil {
					b.Fatal(err)
				}
				scan = ledger.Summarize("contoso", m, got)
				best = min(best, time.Since(start))
			}
			if scan.Entries != n {
				b.Fatalf("scan over %d rows", scan.Entries)
			}
			b.ResetTimer()
			for b.Loop() {
				r, err := l.Report(ctx, "contoso", m)
				if err != nil {
					b.Fatal(err)
				}
				if !reflect.DeepEqual(r, scan) {
					b.Fatalf("rollups disagree with the scan:\n%+v\n%+v", r, scan)
				}
			}
			per := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(best.Microseconds())/1000, "scan-ms")
			b.ReportMetric(float64(per.Microseconds())/1000, "rollup-ms")
			b.ReportMetric(float64(best)/float64(per), "scan/rollup")
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
