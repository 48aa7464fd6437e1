package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// NewestUsage is how far one organization's usage reaches: the newest day
// holding any of its usage, and the day after the last its ledger
// covers (what was fetched, rows or not).
type NewestUsage struct {
	Organization string    // organizations.name
	Day          time.Time // the newest UTC day with usage
	FetchedTo    time.Time // exclusive end of its ledger at hour or day granularity; zero when none
}

// NewestUsageDays returns, per organization, the newest day holding usage
// at hour or day granularity (the rows that say which day data stops;
// week, month and year buckets do not) and how far its ledger reaches,
// oldest organization name first. It reads daily_usage_totals, the
// day-sized table the load keeps, not the usage rows. Estimated rows (usage.source
// projects) are left out: the per-project report is read as it is now.
func (s *Store) NewestUsageDays(ctx context.Context) ([]NewestUsage, error) {
	rows, err := s.db.QueryContext(ctx, `
SELECT t.organization, max(t.day),
       (SELECT max(f."end") FROM fetch_windows f WHERE f.organization = t.organization AND f.granularity IN ('hour', 'day'))
FROM daily_usage_totals t
WHERE t.basis <> 'estimated' AND t.granularity IN ('hour', 'day')
GROUP BY t.organization
ORDER BY t.organization`)
	if err != nil {
		return nil, fmt.Errorf("read the newest usage days: %w", err)
	}
	defer rows.Close()
	var out []NewestUsage
	for rows.Next() {
		var n NewestUsage
		var to sql.NullTime
		if err := rows.Scan(&n.Organization, &n.Day, &to); err != nil {
			return nil, fmt.Errorf("read the newest usage days: %w", err)
		}
		n.Day = n.Day.UTC()
		if to.Valid {
			n.FetchedTo = to.Time.UTC()
		}
		out = append(out, n)
	}
	return out, rows.Err()
}
