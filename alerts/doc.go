// Package alerts owns what Tally tells people between month ends: which
// budget thresholds the month's actual and forecast cost cross, which days
// are cost anomalies, whose usage has stopped arriving (stale), the one line and the JSON body each alert is sent
// as, and sending it to a webhook, signed. The figures come from the
// store's forecasts and anomalies views; which alerts were found and sent
// is the store's alerts table, so each is sent once.
package alerts
