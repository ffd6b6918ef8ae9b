// Package report writes the morning report of the nightly ticket summaries:
// the page a support lead reads over coffee to see what came in yesterday and
// what the model made of it. It is one self-contained HTML page (inline CSS,
// no scripts, no external assets, so that it can be mailed, archived in blob
// storage and opened years later) and the same content as Markdown, for chat
// and for readers without a browser.
//
// The page reads top-down in the order a lead asks the questions:
//
//  1. the counts: tickets in the job, summarised, refused, failed (with
//     expired and cancelled), skipped, tokens and cost;
//  2. the summaries, each with its ticket id (linked back to the support
//     system), subject and customer;
//  3. the refusals, with the reason the content filter gave;
//  4. the failures (failed, expired, cancelled), with their reasons;
//  5. the documents skipped at collection, with file, line and reason.
//
// Everything that comes from a ticket is hostile input: it is escaped by
// html/template in the page and by [EscapeMarkdown] in the Markdown, so a
// subject of "<script>" is text in both. Items are written as they are
// rendered, straight to the io.Writer, in the order given; 50,000 entries
// never become one string. The page stays usable at that size: the counts
// and a table of contents come first, every entry is a compact block, and
// the page is plain flow layout (no scripts, no per-entry containment, which
// in Chromium made 50,000 entries slower to lay out, not faster).
package report
