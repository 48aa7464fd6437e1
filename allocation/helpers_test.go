package allocation

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// The chargeback's tests build their stores through the store's own API
// (internal/testkit/storetest), as the export's do.

// benchRows is store's load benchmark's usage: n hourly rows of January
// 2026 over 224 projects and six meters.
func benchRows(b *testing.B, n int) []tally.MeterData {
	b.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	meters := []string{"video_encoding_ondemand", "video_encoding_uhd", "live_channel_minutes", "streaming_egress_gb", "storage_gb_hours", "drm_license_requests"}
	projects := make([]string, 224)
	for i := range projects {
		projects[i] = "project-" + strconv.Itoa(1000+i)
	}
	perHour := (n + 743) / 744
	rows := make([]tally.MeterData, n)
	price := 0.0125
	for i := range rows {
		d := start.Add(time.Duration(i/perHour) * time.Hour)
		dp := d.Add(2 * time.Hour)
		q4 := int64(uint64(i)*0x9e3779b97f4a7c15>>20) % 100_000_000
		rows[i] = tally.MeterData{
			Date: d, DateProcessed: &dp, MeterName: meters[i%len(meters)], MeterSku: "SKU-" + strconv.Itoa(i%len(meters)),
			Family: "Media Services", Solution: "Encoding", Unit: "minutes", Quantity: float64(q4) / 1e4, Price: &price,
			Cost:     tally.MustDecimal(fmt.Sprintf("%d.%010d", q4*12500/10_000_000_000, q4*12500%10_000_000_000)),
			Currency: "USD", EntitlementType: "license", Entitlement: "0f6c2a52-8d1e-4c55-9a43-1b7e2f0a9c01",
			PaymentMethod: "2439471b-5002-49b6-84d1-8fb30e639959", PaymentMethodName: "Marketplace B private offer",
			Project: projects[i/len(meters)%len(projects)],
		}
	}
	return rows
}
