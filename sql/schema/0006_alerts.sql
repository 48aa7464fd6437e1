-- 0006: budget crossings and cost anomalies, each recorded once and sent
-- once to the alert sinks; and the anomaly thresholds the last run used,
-- so the anomalies view shows what the alerts judged by.
CREATE TABLE alerts (
    key        VARCHAR PRIMARY KEY, -- what makes it one alert: budget:<name>:<actual|forecast>:<percent>:<YYYY-MM> or anomaly:<project>:<meter>:<currency>:<day>
    kind       VARCHAR NOT NULL, -- budget or anomaly
    found_at   TIMESTAMP NOT NULL, -- when a run first found it, UTC
    run_id     UUID NOT NULL, -- the run that found it (runs.id)
    month      DATE NOT NULL, -- the month it is about (first day)
    scope      VARCHAR NOT NULL, -- budget: all, project:<name>, payment_method:<id> or family:<name>; anomaly: project:<name>
    currency   VARCHAR NOT NULL, -- the currency of the amounts it names
    text       VARCHAR NOT NULL, -- the one line a person reads
    payload    VARCHAR NOT NULL, -- the JSON body the webhook is sent
    status     VARCHAR NOT NULL, -- pending (to send), sent, or stale (found more than a week after its day: recorded, never sent)
    sent_at    TIMESTAMP, -- when every sink took it, UTC
    attempts   INTEGER NOT NULL, -- sends tried, over all runs
    last_error VARCHAR -- why the last send failed
);

-- alert_settings: the anomaly thresholds of the last run that checked
-- alerts (the config's anomalies section); the anomalies view applies them.
CREATE TABLE alert_settings (
    mads       DECIMAL(9, 3) NOT NULL, -- anomalies.mads: how many scaled MADs above the median a day's cost must be
    min_amount DECIMAL(18, 6) NOT NULL, -- anomalies.min_amount: and by at least this much, in the row's currency
    min_percent DECIMAL(9, 3) NOT NULL, -- anomalies.min_percent: and by at least this percentage of the median
    updated_at TIMESTAMP NOT NULL -- when a run last wrote them, UTC
);
