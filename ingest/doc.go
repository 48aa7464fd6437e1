// Package ingest owns getting usage in: the fetch step (job step "fetch",
// `tally fetch`, the first step of `tally run`), which plans the due
// windows from the store's ledger (PlanWindows, Plan for `tally plan`),
// fetches them concurrently and loads each whole in its own transaction,
// splitting a window that keeps failing after rows, and snapshots the
// reference data (payment methods, rate cards, projects, locations, the
// organization); the organizations a fetch reads, an organizations:
// config's side by side, one failing alone; usage.source projects'
// estimate from the project reports; and the API token's expiry
// (CheckToken, TokenExpiredError, a refusal). A fetch ends with the
// budget and anomaly check (alerts.CheckAndSend) and the judgement of how
// recent the usage is. Windows, organizations or reference data that
// failed after their retries make the fetch a *job.Partial listing them.
package ingest
