// Package catalog is the model catalog: which model aliases exist (a
// tenant asks for "summarize", never for a deployment), which Azure OpenAI
// deployment serves each alias on each path — a standard deployment for the
// queue path, one or more Global Batch deployments for the batch path — and
// what each costs per million input, cached-input and output tokens. An
// alias that ingests documents also names an embeddings deployment
// ("embedding"), which serves the queue path beside its chat deployment:
// the queue path embeds a document's chunks with one and summarises the
// document with the other, and meters both under the alias.
//
// The catalog is a versioned JSON file shipped with the app (models.json),
// which an app setting may replace. It is validated completely before the
// handler starts: every problem is reported with its field path, e.g.
// aliases.summarize.batch[0].price.output_per_1m, so a bad deployment
// configuration stops start-up instead of mispricing a month of usage.
//
// Money is integer nano-dollars and prices are parsed from their decimal
// text exactly, so estimated costs add up without floating-point drift.
package catalog
