// Package extract turns a document into plain UTF-8 text, streaming, so the
// queue path can chunk and embed documents of any size in a fixed amount of
// memory: New wraps the blob's body in a Reader whose Read returns text, and
// nothing keeps the whole document (or its text) in memory.
//
// Supported kinds (KindOf picks one from the name, then the content type):
//
//   - Text: passed through, line endings normalised.
//   - Markdown: headings, emphasis, code fences, links, images, tables,
//     quotes, lists, inline HTML and front matter are reduced to their text.
//   - HTML: the visible text, with script, style, noscript, template, svg and
//     similar subtrees dropped, entities decoded, whitespace collapsed and
//     block elements turned into line and paragraph breaks (tokenised with
//     golang.org/x/net/html, so no tree is built).
//   - JSON and JSON Lines: every string value, prefixed with the path of
//     keys that leads to it ("author.name: Ada"), one per line.
//   - CSV and TSV: one paragraph per row, each value prefixed with its
//     column's header ("city: Oslo; country: Norway").
//
// The output is UTF-8 without control characters other than tab and
// newline, with at most one blank line in a row: paragraphs are separated
// by a blank line, which package chunk prefers as a cut.
//
// Input is rejected (outcome.Reject, with one of the Reason constants) when
// it cannot yield text: empty or with no visible text, binary (a NUL byte,
// a known binary signature such as a PDF or ZIP named .txt, or more than a
// tenth of control characters in the first 8 KiB), not valid UTF-8
// (including UTF-16, which is recognised by its byte-order mark and named),
// larger than Options.MaxInputBytes, JSON nested deeper than
// Options.MaxDepth, malformed JSON, or an HTML token or JSON string larger
// than Options.MaxTokenBytes. CSV is read leniently (stray quotes are kept, rows
// may have any number of fields), as spreadsheets export it. Errors from the underlying reader are passed
// through unclassified (transient): a storage hiccup is retried.
//
// PDF is not supported. A PDF extractor must handle real-world files (font
// encodings, ToUnicode CMaps, form XObjects, compressed object streams,
// encryption) or it silently yields garbage that is then embedded and
// billed. The only pure-Go extractors in the module proxy were either
// unmaintained forks of rsc.io/pdf, which fail on common exports, or a
// project a few months old, pre-1.0, single-maintainer, that needs the
// whole file as an io.ReaderAt; none qualifies as well kept, and cgo
// (MuPDF, pdfium) is ruled out by the static handler binary. So KindOf
// rejects .pdf and application/pdf with ReasonUnsupported, and so does New
// when handed PDF bytes under another name.
//
// Memory: each kind holds at most one token at a time (a line fragment of
// 64 KiB, an HTML text node, a JSON string, a CSV record). A large token is
// held by its tokenizer and again as output, so HTML text nodes and JSON
// strings are capped by MaxTokenBytes; a CSV record is bounded only by the
// document. Peak RSS of extracting and chunking a 50 MB document is about
// 15 MB (see BenchmarkPipeline).
package extract
