package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sort"
	"strconv"
	"time"

	"github.com/tally-dev/tally/fetch"
	"github.com/tally-dev/tally/fetch/sim"
	"github.com/tally-dev/tally/internal/secret"
)

// The bench data: one month of hourly usage for a large organization, row
// i a deterministic function of i, so the page files, the workbook floor
// and a rerun all see the same rows without storing them.

// simSeed and simToken are the simulated interface the bench serves its
// reference data (payment methods, rate cards) from; the rows bill to its
// payment methods so the workbook's joins find them.
const (
	simSeed  = 7
	simToken = "bench-token"
)

// meter is one billable meter, with its billed unit price ×10^6 per
// currency (the simulated interface's meters).
type meter struct {
	name, sku, family, solution, unit string // sku, unit "" = null
	price                             map[string]int64
}

var meters = []meter{
	{"video_encoding_ondemand", "ENC-OD-SD-MIN", "Media Services", "Encoding", "minutes", map[string]int64{"USD": 12500, "EUR": 11500}},
	{"video_encoding_uhd", "ENC-UHD-MIN", "Media Services", "Encoding", "minutes", map[string]int64{"USD": 45000, "EUR": 41000}},
	{"live_channel_minutes", "LIVE-CH-MIN", "Media Services", "Streaming", "minutes", map[string]int64{"USD": 21000, "EUR": 19500}},
	{"streaming_egress_gb", "STR-EGRESS-GB", "Media Services", "Streaming", "gigabytes", map[string]int64{"USD": 35000, "EUR": 32000}},
	{"storage_gb_hours", "STO-GB-HR", "Media Services", "Storage", "gigabyte hours", map[string]int64{"USD": 309, "EUR": 206}},
	{"drm_license_requests", "", "Content Protection", "DRM", "", map[string]int64{"USD": 500, "EUR": 450}},
}

// entitlements rows draw on, by project: none, a license (nothing billed)
// or a balance.
var entitlements = []struct{ id, typ string }{
	{"", ""},
	{"0f6c2a52-8d1e-4c55-9a43-1b7e2f0a9c01", "license"},
	{"5b9e7d10-3f2a-4e8b-b1c4-7d2e9f6a0b02", "cash"},
	{"", ""},
	{"a3d4c5e6-f7a8-4b9c-8d0e-1f2a3b4c5d03", "preCommitment"},
}

// payer is a payment method usage bills to.
type payer struct{ id, name, currency string }

// dataset is the rows of one month.
type dataset struct {
	month   time.Time // first day, UTC
	rows    int
	perHour int // rows in each hour bucket (the last may hold fewer)
	payers  []payer
	meters  []meter
	// pairs is the number of distinct project–meter pairs the rows cycle
	// through (0: every row of an hour its own pair, as many projects as
	// that takes).
	pairs int
}

// newDataset returns the month's rows. With projects and nMeters above 0
// the rows cycle through projects × nMeters pairs (the first six meters the
// simulated interface's, the others variants of them); otherwise each hour
// has as many projects of the six meters as its rows need.
func newDataset(month time.Time, rows int, payers []payer, projects, nMeters int) (*dataset, error) {
	if rows < 1 {
		return nil, fmt.Errorf("rows %d: must be at least 1", rows)
	}
	if len(payers) == 0 {
		return nil, fmt.Errorf("no payment methods to bill")
	}
	if (projects > 0) != (nMeters > 0) || projects < 0 || nMeters < 0 {
		return nil, fmt.Errorf("projects %d, meters %d: give both, at least 1 each, or neither", projects, nMeters)
	}
	hours := int(month.AddDate(0, 1, 0).Sub(month) / time.Hour)
	perHour := (rows + hours - 1) / hours
	d := &dataset{month: month, rows: rows, perHour: perHour, payers: payers, meters: meters}
	if nMeters > 0 {
		d.meters, d.pairs = meterVariants(nMeters), projects*nMeters
	}
	return d, nil
}

// meterVariants returns n meters: the simulated interface's six, then
// variants of them (their own name and SKU, the same family, unit and
// price), so that a month can bill as many distinct meters as a large
// organization does.
func meterVariants(n int) []meter {
	out := make([]meter, n)
	for i := range out {
		m := meters[i%len(meters)]
		if v := i / len(meters); v > 0 {
			m.name = fmt.Sprintf("%s_v%d", m.name, v)
			if m.sku != "" {
				m.sku = fmt.Sprintf("%s-V%d", m.sku, v)
			}
		}
		out[i] = m
	}
	return out
}

// row is one generated MeterData row; money as scaled integers so that the
// JSON text and the workbook cells come from the same exact values.
type row struct {
	date, processed time.Time // processed zero: not charged yet
	meter           *meter
	project         string
	q4              int64 // quantity ×10^4
	price6          int64 // unit price ×10^6
	cost10          int64 // cost ×10^10 = q4 × price6
	payer           *payer
	entID, entType  string
}

func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// at returns row i, in the order the interface sends them: by hour, then
// project, then meter.
func (d *dataset) at(i int, r *row) {
	h, k := i/d.perHour, i%d.perHour
	p, m, payer := k/len(d.meters), k%len(d.meters), 0
	if d.pairs > 0 {
		// Row i bills pair i mod pairs: every pair comes up in turn, and
		// an hour repeats one only when it has more rows than pairs (then
		// on another payment method).
		pair := i % d.pairs
		p, m, payer = pair/len(d.meters), pair%len(d.meters), k/d.pairs
	}
	r.date = d.month.Add(time.Duration(h) * time.Hour)
	r.meter = &d.meters[m]
	r.project = projectName(p)
	r.payer = &d.payers[(p+payer)%len(d.payers)]
	x := mix(uint64(i) + 0x9e3779b97f4a7c15)
	r.q4 = int64(x % 100_000_000) // up to 9,999.9999 units
	r.price6 = r.meter.price[r.payer.currency]
	r.cost10 = r.q4 * r.price6
	r.processed = time.Time{}
	if x>>40%50 != 0 { // one row in fifty is not charged yet
		r.processed = r.date.Add(time.Duration(1+x>>48%6) * time.Hour)
	}
	e := entitlements[p%len(entitlements)]
	r.entID, r.entType = e.id, e.typ
}

func projectName(p int) string { return "project-" + strconv.Itoa(1000+p) }

// hourRows returns the first row index of hour bucket h, clamped to rows.
func (d *dataset) hourRows(h int) int { return min(h*d.perHour, d.rows) }

// simPayers reads the simulated interface's payment methods and the
// currency of each one's rate card, in-process.
func simPayers(ctx context.Context) ([]payer, error) {
	srv := httptest.NewServer(sim.New(sim.Options{Token: simToken, Seed: simSeed}))
	defer srv.Close()
	c, err := fetch.NewClient(srv.URL, secret.New(simToken))
	if err != nil {
		return nil, err
	}
	pms, err := c.PaymentMethods(ctx)
	if err != nil {
		return nil, fmt.Errorf("read simulated payment methods: %w", err)
	}
	var out []payer
	for _, pm := range pms {
		rc, err := c.RateCard(ctx, pm.ID)
		if err != nil || rc.Currency == "" {
			continue
		}
		out = append(out, payer{id: pm.ID, name: pm.DisplayName, currency: rc.Currency})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// fixed renders v × 10^-places with exactly places decimals.
func appendFixed(b []byte, v int64, places int) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	var p int64 = 1
	for range places {
		p *= 10
	}
	b = strconv.AppendInt(b, v/p, 10)
	b = append(b, '.')
	frac := strconv.FormatInt(v%p, 10)
	for range places - len(frac) {
		b = append(b, '0')
	}
	return append(b, frac...)
}
