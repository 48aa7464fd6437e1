// Package fetch owns Tally's side of the media cloud's management interface:
// the HTTP client (bearer auth, paging by @odata.nextLink, retries with
// backoff), the usage query and its date windows, the resource types
// (MeterData, payment methods, rate cards, projects, locations) and their
// decoding from JSON and CSV.
//
// It knows nothing of storage: rows leave it as an iterator, and what becomes
// of them is the caller's business.
package fetch
