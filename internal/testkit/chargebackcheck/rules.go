package chargebackcheck

import (
	"time"

	"github.com/tally-dev/tally"
)

// Months are the months of the chargeback proofs, as [start, end) days:
// the sim's usage of August to October 2026 at day granularity.
var Months = [][2]string{{"2026-08-01", "2026-09-01"}, {"2026-09-01", "2026-10-01"}, {"2026-10-01", "2026-11-01"}}

// Rules uses every method on the sim's projects: newsroom and archive are
// News's, sports-live Sport's, training nobody's (what no rule shares of
// it is Unallocated). Every rule holds from August 2026.
func Rules() tally.Allocation {
	aug := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	return tally.Allocation{
		CostCentres: []tally.CostCentre{
			{Name: "News", Owner: "news@example.com", Projects: []string{"newsroom", "archive"}},
			{Name: "Sport", Projects: []string{"sports-live"}},
		},
		Rules: []tally.AllocationRule{
			{Name: "training storage", From: aug, Projects: []string{"training"}, Meters: []string{"storage_gb_hours"},
				Receivers: []string{"News", "Sport"}, Method: tally.AllocateFixed, Percent: []tally.Decimal{tally.MustDecimal("33.333333"), tally.MustDecimal("66.666667")}},
			{Name: "archive egress", From: aug, Projects: []string{"archive"}, Meters: []string{"streaming_egress_gb"},
				Receivers: []string{"News", "Sport"}, Method: tally.AllocateEven},
			{Name: "drm", From: aug, Families: []string{"Content Protection"},
				Receivers: []string{"Sport", "News"}, Method: tally.AllocateProportional},
			{Name: "egress", From: aug, Projects: []string{"sports-live"}, Meters: []string{"streaming_egress_gb"},
				Receivers: []string{"News", "Sport"}, Method: tally.AllocateDriver, Driver: "video_encoding_ondemand"},
			// Nobody uses this driver: the split falls back to proportional.
			{Name: "uhd", From: aug, Meters: []string{"video_encoding_uhd"},
				Receivers: []string{"News", "Sport"}, Method: tally.AllocateDriver, Driver: "transcode_minutes"},
		},
	}
}
