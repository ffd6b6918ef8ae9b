// Function names in a package of their own (never compiled).
package names

const NightlySummaries = "nightly-summaries"
