package sim

import (
	"math"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/tally-dev/tally"
)

const (
	hourSec = 3600
	daySec  = 86400
	// maxLagHours bounds the charge lag, so a reported-date query knows how
	// far before its start to look for usage charged inside it.
	minLagHours = 6
	maxLagHours = 30
	// uncharged marks a row whose dateProcessed is null.
	uncharged = math.MinInt64
)

// Salts keep the hashes of one hour's different draws independent.
const (
	saltZero uint64 = iota + 1
	saltQty
	saltLag
	saltProvisional
)

// query is a usage query as the sim evaluates it.
type query struct {
	start, end time.Time
	g          tally.Granularity
	reported   bool
	projects   []string
	pms        []string
	meters     []string
}

func fromUsageQuery(q tally.UsageQuery) query {
	g := q.Window.Granularity
	if g == "" {
		g = tally.Day
	}
	return query{
		start: q.Window.Start.UTC(), end: q.Window.End.UTC(), g: g, reported: q.ReportedDate,
		projects: q.ProjectNames, pms: q.PaymentMethodIDs, meters: q.MeterNames,
	}
}

// unit is one hour of one project's use of one meter, as the clock sees it.
type unit struct {
	pair      int
	pm        int
	ent       int // -1: no entitlement
	q4        int64
	cost10    int64
	processed int64 // unix seconds of the charge, or uncharged
}

// rowAgg is one usage row: the sum of the units sharing its bucket and key.
type rowAgg struct {
	bucket    int64 // unix seconds of the bucket start
	processed int64 // unix seconds of the processed bucket, or uncharged
	pair, pm  int
	ent       int
	q4        int64
	cost10    int64
}

// rand draws a well-spread number from an hour and a pair.
func (c *catalog) rand(h int64, pair int, salt uint64) uint64 {
	return mix(c.seed ^ mix(uint64(h)^uint64(pair)<<40^salt<<56))
}

// lag is the charge delay of an hour, the same for every meter in it.
func (c *catalog) lag(h int64) int64 {
	return minLagHours + int64(c.rand(h, 0xffff, saltLag)%(maxLagHours-minLagHours+1))
}

// quantity is an hour's final quantity, ×10^4.
func (c *catalog) quantity(h int64, i int, m pairModel) int64 {
	if m.max == 0 {
		return 0
	}
	if m.zeroPct > 0 && c.rand(h, i, saltZero)%100 < m.zeroPct {
		return 0
	}
	r := int64(c.rand(h, i, saltQty) % 1001)
	var q int64
	if m.shape == steady {
		q = m.max * (900 + r%101) / 1000
	} else {
		q = m.max * shapePct(m.shape, h) / 100 * r / 1000
	}
	return q / m.step * m.step
}

func shapePct(s shape, h int64) int64 {
	hod := (h / hourSec) % 24
	weekday := (h/daySec + 3) % 7 // Monday = 0; 1970-01-01 was a Thursday
	switch s {
	case office:
		pct := int64(25)
		if hod >= 8 && hod < 18 {
			pct = 100
		}
		if weekday >= 5 {
			pct = pct * 40 / 100
		}
		return pct
	case evening:
		switch {
		case hod >= 17:
			return 100
		case hod >= 11:
			return 60
		}
		return 20
	}
	return 100
}

// hourUnits calls fn for each unit of the hour starting at h that passes f.
func (c *catalog) hourUnits(h, now int64, f *filter, fn func(*unit)) {
	lag := c.lag(h)
	charged := now >= h+lag*hourSec
	var u unit
	for i, p := range c.pairs {
		if !f.pairs[i] || h < c.projects[p.project].created.Unix() {
			continue
		}
		pm := c.paymentMethodAt(p.project, h)
		if pm < 0 || f.pms != nil && !f.pms[pm] {
			continue
		}
		bill := c.billing[i][pm]
		q := c.quantity(h, i, p.model)
		for _, sp := range c.spikes {
			if i == sp.pair && h >= sp.day && h < sp.day+daySec && now >= sp.from {
				q *= sp.factor
			}
		}
		u = unit{pair: i, pm: pm, ent: bill.ent, processed: uncharged}
		if charged {
			u.processed = h + lag*hourSec
		} else {
			// Provisional: part of the hour is not yet metered.
			pct := 70 + int64(c.rand(h, i, saltProvisional)%26)
			q = q * pct / 100 / p.model.step * p.model.step
		}
		u.q4 = q
		u.cost10 = q * bill.price
		fn(&u)
	}
}

// filter is a query's filters, resolved to the pairs and payment methods
// they keep. A nil pms keeps every payment method.
type filter struct {
	pairs []bool
	pms   []bool
}

func (c *catalog) filter(q query) *filter {
	set := func(vals []string) map[string]bool {
		if len(vals) == 0 {
			return nil
		}
		m := map[string]bool{}
		for _, v := range vals {
			m[v] = true
		}
		return m
	}
	projects, methods, meterNames := set(q.projects), set(q.pms), set(q.meters)
	f := &filter{pairs: make([]bool, len(c.pairs))}
	for i, p := range c.pairs {
		f.pairs[i] = (projects == nil || projects[c.projects[p.project].name]) &&
			(meterNames == nil || meterNames[meters[p.model.meter].name])
	}
	if methods != nil {
		f.pms = make([]bool, len(c.pms))
		for i, pm := range c.pms {
			f.pms[i] = methods[pm.id]
		}
	}
	return f
}

// span is the range of hours [lo, hi) a query must look at: the window (for
// a reported-date query, widened back by the longest charge lag), clipped to
// the first day of usage and to the last complete hour before now.
func (c *catalog) span(q query, now int64) (lo, hi int64) {
	lo, hi = q.start.Unix(), q.end.Unix()
	if q.reported {
		lo -= maxLagHours * hourSec
	}
	lo = max(lo, c.start.Unix())
	lo += floorMod(-lo, hourSec) // round up to an hour
	hi = min(hi, now-floorMod(now, hourSec))
	return lo, hi
}

// units calls fn for each unit in [lo, hi) that q keeps.
func (c *catalog) units(q query, f *filter, now, lo, hi int64, fn func(h int64, u *unit)) {
	from, to := q.start.Unix(), q.end.Unix()
	for h := lo; h < hi; h += hourSec {
		c.hourUnits(h, now, f, func(u *unit) {
			if q.reported {
				if u.processed == uncharged || u.processed < from || u.processed >= to {
					return
				}
			} else if h < from || h >= to {
				return
			}
			fn(h, u)
		})
	}
}

// eachRow calls fn for the rows q returns at the clock now, bucket by
// bucket, in answer order, until fn returns false. Only one bucket's rows
// are held at a time.
func (c *catalog) eachRow(q query, now int64, fn func(*rowAgg) bool) {
	lo, hi := c.span(q, now)
	if lo >= hi {
		return
	}
	f := c.filter(q)
	type key struct {
		pair, pm, ent int
		processed     int64
	}
	index := map[key]int{}
	var rows []rowAgg
	for b := bucketStart(q.g, time.Unix(lo, 0)); b.Unix() < hi; b = nextBucket(q.g, b) {
		bs := b.Unix()
		clear(index)
		rows = rows[:0]
		c.units(q, f, now, max(bs, lo), min(nextBucket(q.g, b).Unix(), hi), func(_ int64, u *unit) {
			p := int64(uncharged)
			if u.processed != uncharged {
				p = truncUnix(q.g, u.processed)
			}
			k := key{u.pair, u.pm, u.ent, p}
			i, ok := index[k]
			if !ok {
				i = len(rows)
				index[k] = i
				rows = append(rows, rowAgg{bucket: bs, processed: p, pair: u.pair, pm: u.pm, ent: u.ent})
			}
			rows[i].q4 += u.q4
			rows[i].cost10 += u.cost10
		})
		slices.SortFunc(rows, func(a, b rowAgg) int {
			switch {
			case a.pair != b.pair:
				return a.pair - b.pair
			case a.pm != b.pm:
				return a.pm - b.pm
			case a.ent != b.ent:
				return a.ent - b.ent
			case a.processed < b.processed:
				return -1
			case a.processed > b.processed:
				return 1
			}
			return 0
		})
		for i := range rows {
			if !fn(&rows[i]) {
				return
			}
		}
	}
}

// truncUnix is Granularity.Truncate on unix seconds, with arithmetic for
// the granularities whose buckets have a fixed length.
func truncUnix(g tally.Granularity, t int64) int64 {
	switch g {
	case tally.Hour:
		return t - floorMod(t, hourSec)
	case tally.Day:
		return t - floorMod(t, daySec)
	case tally.Week:
		d := t - floorMod(t, daySec)
		return d - floorMod(d/daySec+3, 7)*daySec
	}
	return bucketStart(g, time.Unix(t, 0)).Unix()
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// meterData renders a row as the client decodes it.
func (c *catalog) meterData(r *rowAgg) tally.MeterData {
	p := c.pairs[r.pair]
	m := meters[p.model.meter]
	pm := c.pms[r.pm]
	md := tally.MeterData{
		Date:              time.Unix(r.bucket, 0).UTC(),
		MeterName:         m.name,
		MeterSku:          m.sku,
		Family:            m.family,
		Solution:          m.solution,
		Unit:              m.unit,
		Quantity:          float64(r.q4) / 1e4,
		Price:             price(r),
		Cost:              tally.NewDecimal(big.NewInt(r.cost10), 10),
		Currency:          pm.currency,
		PaymentMethod:     pm.id,
		PaymentMethodName: pm.name,
		Project:           c.projects[p.project].name,
	}
	if r.processed != uncharged {
		t := time.Unix(r.processed, 0).UTC()
		md.DateProcessed = &t
	}
	if r.ent >= 0 {
		md.Entitlement = c.ents[r.ent].id
		md.EntitlementType = c.ents[r.ent].typ
	}
	return md
}

// price is cost ÷ quantity, the float nearest the exact ratio, or nil for
// a row with no quantity.
func price(r *rowAgg) *float64 {
	if r.q4 == 0 {
		return nil
	}
	den := new(big.Int).Mul(big.NewInt(r.q4), big.NewInt(1e6))
	f, _ := new(big.Rat).SetFrac(big.NewInt(r.cost10), den).Float64()
	return &f
}

// fixed renders v × 10^-scale with exactly scale decimals.
func fixed(v int64, scale int) string {
	s := strconv.FormatInt(v, 10)
	neg := v < 0
	if neg {
		s = s[1:]
	}
	for len(s) <= scale {
		s = "0" + s
	}
	s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	if neg {
		s = "-" + s
	}
	return s
}

// Truth is what a query must return in total: its row count, its cost per
// currency (exact) and its quantity summed over every meter.
type Truth struct {
	Rows     int
	Cost     map[string]tally.Decimal
	Quantity float64
}

// Truth sums the hourly truth a query covers at the sim's current clock.
// The cost and quantity are summed hour by hour, not from the rows, so a
// test comparing them with the rows checks the aggregation too. Truth skips
// the interface's range limits: it answers for any window.
func (s *Server) Truth(q tally.UsageQuery) Truth {
	iq := fromUsageQuery(q)
	now := s.opts.Now().Unix()
	t := Truth{Cost: map[string]tally.Decimal{}}
	lo, hi := s.cat.span(iq, now)
	byPM := make([]int64, len(s.cat.pms))
	seen := make([]bool, len(s.cat.pms))
	var q4 int64
	if lo < hi {
		s.cat.units(iq, s.cat.filter(iq), now, lo, hi, func(_ int64, u *unit) {
			byPM[u.pm] += u.cost10
			seen[u.pm] = true
			q4 += u.q4
		})
	}
	cost := map[string]int64{}
	for pm, v := range byPM {
		if seen[pm] {
			cost[s.cat.pms[pm].currency] += v
		}
	}
	for cur, v := range cost {
		t.Cost[cur] = tally.NewDecimal(big.NewInt(v), 10)
	}
	t.Quantity = float64(q4) / 1e4
	s.cat.eachRow(iq, now, func(*rowAgg) bool { t.Rows++; return true })
	return t
}

// Rows returns exactly the rows a fault-free usage request for q answers
// at the sim's current clock, all pages together, in answer order. Like
// Truth it skips the interface's range limits.
func (s *Server) Rows(q tally.UsageQuery) []tally.MeterData {
	var out []tally.MeterData
	s.cat.eachRow(fromUsageQuery(q), s.opts.Now().Unix(), func(r *rowAgg) bool {
		out = append(out, s.cat.meterData(r))
		return true
	})
	return out
}
