// Package fetch owns Tally's HTTP side of the media cloud's management
// interface: the client (bearer auth, paging by @odata.nextLink, retries
// with backoff, resuming a cut page), the usage request and the decoding of
// its JSON and CSV answers, and the reference resources. The types it speaks
// in (MeterData, windows, decimals, the usage query) are the root package
// tally's.
//
// It knows nothing of storage: rows leave it as an iterator, and what becomes
// of them is the caller's business.
package fetch
