// Package memstore holds in-memory stand-ins for offpath's Table Storage
// stores (package tablestore): Jobs for the batch job store and Ledger for
// the usage ledger. A test whose subject is not storage uses them to run
// thousands of jobs or entries without an Azurite round trip each.
//
// They behave as the real stores do, and are held to it: the package's
// tests run one contract suite against each stand-in and against the
// tablestore implementation on Azurite (get, conditional writes,
// not-found, listing order and filters). A behaviour a stand-in has that
// the store lacks, or the reverse, fails that suite.
package memstore
