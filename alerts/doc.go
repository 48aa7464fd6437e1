// Package alerts owns what Tally tells people between month ends: which
// budget thresholds the month's actual and forecast cost cross, which days
// are cost anomalies, whose usage has stopped arriving (stale), which
// commitments are drawn faster than they last (as the workbook's
// Commitments sheet measures them, store.CommitmentDraws), the one
// line and the JSON body each alert is sent as, and sending it to a
// webhook, signed. CheckAndSend is the alerts step, the one path by which
// alerts go out; the runner follows every fetch with it. Its records are
// its own: the alerts table (which alerts were found and sent, so each is
// sent once) and alert_settings (the anomaly thresholds the anomalies view
// applies), written through store.InTx. The figures come from the
// store's forecasts and anomalies views, whose day-range reads and kept
// baselines (daily_baselines) are the store's. How recent the usage is
// has its type in job (job.Freshness, which alerts.Freshness names), and
// a check's budget figures reach the runner's metrics through Check's
// methods, so the runner imports no alerts.
package alerts
