package sim

import (
	"fmt"
	"math"
	"time"
)

// meter is one billable meter. Prices are per unit, scaled by 10^6; the
// billed price is what usage rows are charged at.
type meter struct {
	name     string
	sku      string // "" is null
	family   string
	solution string
	unit     string // "" is null
	billed   map[string]int64
}

const (
	mEncodingSD = iota
	mEncodingUHD
	mLiveMinutes
	mEgress
	mStorage
	mDRM
)

var meters = []meter{
	mEncodingSD:  {"video_encoding_ondemand", "ENC-OD-SD-MIN", "Media Services", "Encoding", "minutes", map[string]int64{"USD": 12500, "EUR": 11500}},
	mEncodingUHD: {"video_encoding_uhd", "ENC-UHD-MIN", "Media Services", "Encoding", "minutes", map[string]int64{"USD": 45000, "EUR": 41000}},
	mLiveMinutes: {"live_channel_minutes", "LIVE-CH-MIN", "Media Services", "Streaming", "minutes", map[string]int64{"USD": 21000, "EUR": 19500}},
	mEgress:      {"streaming_egress_gb", "STR-EGRESS-GB", "Media Services", "Streaming", "gigabytes", map[string]int64{"USD": 35000, "EUR": 32000}},
	// Billed 3% above the rate card (0.000300 USD, 0.000200 EUR), so a
	// variance check has something to flag.
	mStorage: {"storage_gb_hours", "STO-GB-HR", "Media Services", "Storage", "gigabyte hours", map[string]int64{"USD": 309, "EUR": 206}},
	// No rate card prices this meter, and its sku and unit are null.
	mDRM: {"drm_license_requests", "", "Content Protection", "DRM", "", map[string]int64{"USD": 500, "EUR": 450}},
}

// ratePrice is one price of a rate card. Its name, sku or the name in
// parentheses is what joins it to usage, as the platform's documented quirk
// has it: the price "advanced_sd(video_encoding_ondemand)" prices the meter
// "video_encoding_ondemand".
type ratePrice struct {
	name, displayName, sku, unit string
	price                        map[string]int64 // per currency, ×10^6
	locations                    []locationPrice
}

type locationPrice struct {
	group string
	sku   string // "" is null
	price map[string]int64
}

type rateEntry struct {
	family, solution string
	prices           []ratePrice
}

var rateCardEntries = []rateEntry{
	{"Media Services", "Encoding", []ratePrice{
		// Matches by the meter name in parentheses: the sku differs.
		{"advanced_sd(video_encoding_ondemand)", "Advanced SD encoding, on demand", "ENC-ADV-SD", "minutes", map[string]int64{"USD": 12500, "EUR": 11500}, nil},
		// Matches by sku.
		{"premium_uhd(video_encoding_uhd)", "Premium UHD encoding", "ENC-UHD-MIN", "minutes", map[string]int64{"USD": 45000, "EUR": 41000}, nil},
		// Prices nothing the usage carries.
		{"thumbnail_generation", "Thumbnail generation", "ENC-THUMB", "images", map[string]int64{"USD": 1000, "EUR": 900}, nil},
	}},
	{"Media Services", "Streaming", []ratePrice{
		// Matches by plain name only.
		{"live_channel_minutes", "Live channel", "LIVE-STD", "minutes", map[string]int64{"USD": 21000, "EUR": 19500}, nil},
		{"egress_standard", "Streaming egress", "STR-EGRESS-GB", "gigabytes", map[string]int64{"USD": 35000, "EUR": 32000}, []locationPrice{
			{"europe", "STR-EGRESS-GB-EU", map[string]int64{"USD": 31000, "EUR": 28500}},
			{"asia-pacific", "", map[string]int64{"USD": 52000, "EUR": 47250}},
		}},
	}},
	{"Media Services", "Storage", []ratePrice{
		{"storage_standard", "Storage", "STO-GB-HR", "gigabyte hours", map[string]int64{"USD": 300, "EUR": 200}, nil},
	}},
}

// paymentMethod is one payment method; spec holds the variant's own fields.
type paymentMethod struct {
	id, name, typ, currency string
	created                 time.Time
	startDate, endDate      *time.Time
	publication             string
	publicationID           string
	privateOffer            bool
	active                  bool
	spec                    map[string]any // variant fields beyond the common ones
	ent                     map[string]int // solution → entitlement index; absent: none
}

const (
	pmDirect = iota
	pmMarketA
	pmMarketB
	pmLegacy
)

type entitlement struct{ id, typ string }

type project struct {
	name, displayName, id string
	created               time.Time
	active                bool
	location              int
	pm                    int // payment method billed, -1: none
	pmLater               int // payment method from switchAt on, -1: no switch
	usage                 []pairModel
}

// pairModel says how much of one meter a project uses in an hour.
type pairModel struct {
	meter   int
	max     int64 // largest hourly quantity, ×10^4
	shape   shape
	zeroPct uint64 // chance in percent that an hour is idle
	step    int64  // quantity granule, ×10^4 (1 = any 4-decimal value)
}

type shape int

const (
	office  shape = iota // working hours, quieter weekends
	evening              // viewing peaks in the evening
	flat                 // anything, any time
	steady               // 90-100% of max every hour (storage)
)

type location struct {
	id, name, displayName, typ, cloud, cloudDisplay, region, regionDisplay string
}

// catalog is the reference data of one seed and start.
type catalog struct {
	seed       uint64
	start      time.Time
	switchAt   time.Time // the day sports-live moves to another payment method
	orgID      string
	orgName    string
	userID     string
	pms        []paymentMethod
	ents       []entitlement
	projects   []project
	locations  []location
	pairs      []pair      // every (project, meter) in sorted order
	billing    [][]billing // [pair][payment method]: entitlement and price, resolved once
	pmByID     map[string]int
	projByName map[string]int
	// spikes are Options.Spike and Options.Revisions, resolved.
	spikes []spikeAt
}

// spikeAt is a Spike resolved: pair's use on the day starting at day (unix
// seconds) is multiplied by factor once the clock reaches from.
type spikeAt struct {
	pair              int
	day, factor, from int64
}

// addSpike resolves a Spike to its pair; a spike naming no pair, or with a
// factor below 2, injects nothing.
func (c *catalog) addSpike(sp Spike) {
	if sp.Factor <= 1 {
		return
	}
	for i, p := range c.pairs {
		if c.projects[p.project].name == sp.Project && meters[p.model.meter].name == sp.Meter {
			d := sp.Day.UTC()
			var from int64 = math.MinInt64
			if !sp.From.IsZero() {
				from = sp.From.Unix()
			}
			c.spikes = append(c.spikes, spikeAt{pair: i, day: time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC).Unix(), factor: sp.Factor, from: from})
		}
	}
}

// billing is how one pair's usage is charged under one payment method.
type billing struct {
	ent   int   // -1: no entitlement
	price int64 // billed unit price ×10^6 in the method's currency
}

// pair is one project's use of one meter; pairs are sorted by project then
// meter name so rows come out in a stable order.
type pair struct {
	project int
	model   pairModel
}

func newCatalog(seed int64, start time.Time, currency ...string) *catalog {
	c := &catalog{seed: mix(uint64(seed) ^ 0x7a11c0ffee), start: start}
	id := func(label string) string { return c.uuid(label) }
	day := func(days int) *time.Time { t := start.AddDate(0, 0, days); return &t }
	first := time.Date(start.Year(), start.Month(), 1, 0, 0, 0, 0, time.UTC)
	c.switchAt = first.AddDate(0, 1, 14)
	c.orgID, c.orgName, c.userID = id("organization"), "Example Media Group", id("user")

	c.ents = []entitlement{
		{id("ent/direct/cash"), "cash"},
		{id("ent/direct/precommit"), "pre-commitment"},
		{id("ent/direct/promo"), "promotional"},
		{id("ent/a/license"), "license"},
		{id("ent/a/quantity"), "quantity"},
		{id("ent/b/precommit"), "pre-commitment"},
		{id("ent/b/cash"), "cash"},
		{id("ent/legacy/license"), "license"},
	}
	legacyStart := start.AddDate(-1, 0, 0)
	c.pms = []paymentMethod{
		pmDirect: {
			id: id("pm/direct"), name: "Enterprise agreement", typ: "direct", currency: "USD",
			created: start.AddDate(0, 0, -20), startDate: day(0), publication: "media-cloud-enterprise-usd",
			publicationID: id("pub/enterprise-usd"), active: true,
			spec: map[string]any{"salesOrderNumber": "SO-2024-118842", "redeemedBy": "finance@example.com", "status": "active"},
			ent:  map[string]int{"Encoding": 0, "Streaming": 1, "DRM": 2},
		},
		pmMarketA: {
			id: id("pm/marketA"), name: "Marketplace A subscription", typ: "marketplaceA", currency: "USD",
			created: start.AddDate(0, 0, -60), publication: "media-cloud-marketplace-a",
			publicationID: id("pub/marketplace-a"), active: true,
			spec: map[string]any{
				"marketplaceAAccountId": "318274650921", "marketplaceAOfferId": "offer-7hq2kx9w",
				"marketplaceAProductCode": "prod-mc4d8s1ejq", "marketplaceACustomerId": "cust-QW8E2R",
				"marketplaceAStatus": "subscribe-success",
			},
			ent: map[string]int{"Streaming": 3, "Encoding": 4},
		},
		pmMarketB: {
			id: id("pm/marketB"), name: "Marketplace B private offer", typ: "marketplaceB", currency: "EUR",
			created: c.switchAt.AddDate(0, 0, -7), startDate: &c.switchAt, publication: "media-cloud-private-eur",
			publicationID: id("pub/private-eur"), privateOffer: true, active: true,
			spec: map[string]any{
				"marketplaceBPrivateOfferId": id("offer/b"), "marketplaceBOfferId": "media-cloud-saas",
				"marketplaceBPlanName": "enterprise-eur", "marketplaceBSaasSubscriptionId": id("subscription/b"),
				"marketplaceBSaasSubscriptionName": "sports-eur", "marketplaceBSaasSubscriptionStart": c.switchAt.Format(time.RFC3339),
				"marketplaceBSaasSubscriptionEnd": nil, "marketplaceBSaasSubscriptionStatus": "Subscribed",
				"marketplaceBSaasSubscriptionAutoRenew": true,
			},
			ent: map[string]int{"Streaming": 5, "Storage": 6},
		},
		// Expired 40 days after start, yet the archive project stays billed
		// to it: usage outside the method's validity.
		pmLegacy: {
			id: id("pm/legacy"), name: "Legacy EU agreement", typ: "direct", currency: "EUR",
			created: legacyStart, startDate: &legacyStart, endDate: day(40), publication: "media-cloud-enterprise-eur",
			publicationID: id("pub/enterprise-eur"), active: false,
			spec: map[string]any{"salesOrderNumber": "SO-2023-077310", "redeemedBy": nil, "status": "expired"},
			ent:  map[string]int{"Storage": 7},
		},
	}
	// One currency for every method (Options.Currency): an organization
	// billed in its own currency, as a group's subsidiaries are.
	if len(currency) > 0 && currency[0] != "" {
		for i := range c.pms {
			c.pms[i].currency = currency[0]
		}
	}
	c.locations = []location{
		{id("loc/eu"), "westeurope", "West Europe", "SaaS", "cloud-a", "Cloud A", "westeurope", "West Europe"},
		{id("loc/us"), "eastus", "East US", "SaaS", "cloud-a", "Cloud A", "eastus", "East US"},
		{id("loc/dedicated"), "dedicated-fra", "Dedicated Frankfurt", "Dedicated", "cloud-b", "Cloud B", "germanywestcentral", "Germany West Central"},
	}
	c.projects = []project{
		{"archive", "Archive", id("project/archive"), start.AddDate(-1, 0, 0), true, 0, pmLegacy, -1, []pairModel{
			{mStorage, 200000000, steady, 0, 1},
			{mEgress, 50000, flat, 50, 1},
			{mDRM, 2000000, flat, 40, 10000},
		}},
		{"newsroom", "Newsroom", id("project/newsroom"), start.AddDate(0, 0, -10), true, 0, pmDirect, -1, []pairModel{
			{mEncodingSD, 1800000, office, 5, 1},
			{mEncodingUHD, 400000, office, 30, 1},
			{mEgress, 1200000, evening, 0, 1},
			{mStorage, 80000000, steady, 0, 1},
			{mDRM, 30000000, evening, 10, 10000},
		}},
		{"sandbox", "Sandbox", id("project/sandbox"), start.AddDate(0, 0, -90), false, 1, -1, -1, nil},
		{"sports-live", "Sports Live", id("project/sports-live"), start.AddDate(0, 0, -30), true, 2, pmMarketA, pmMarketB, []pairModel{
			{mEncodingSD, 600000, office, 20, 1},
			{mLiveMinutes, 2400000, evening, 0, 600000},
			{mEgress, 4500000, evening, 0, 1},
			{mStorage, 120000000, steady, 0, 1},
		}},
		// Created ten days after start; its live channel is provisioned but
		// idle, so it reports rows with quantity 0 and no price.
		{"training", "Training", id("project/training"), start.AddDate(0, 0, 10), true, 1, pmMarketA, -1, []pairModel{
			{mEncodingSD, 300000, office, 60, 1},
			{mLiveMinutes, 0, flat, 0, 1},
			{mStorage, 5000000, steady, 0, 1},
		}},
	}
	c.pmByID = map[string]int{}
	for i, pm := range c.pms {
		c.pmByID[pm.id] = i
	}
	c.projByName = map[string]int{}
	for i, p := range c.projects {
		c.projByName[p.name] = i
		for _, m := range p.usage {
			c.pairs = append(c.pairs, pair{i, m})
		}
	}
	// Projects are declared in name order; sort each one's meters by name.
	for i := 1; i < len(c.pairs); i++ {
		for j := i; j > 0; j-- {
			a, b := c.pairs[j-1], c.pairs[j]
			if a.project < b.project || a.project == b.project && meters[a.model.meter].name <= meters[b.model.meter].name {
				break
			}
			c.pairs[j-1], c.pairs[j] = b, a
		}
	}
	for _, p := range c.pairs {
		m := meters[p.model.meter]
		row := make([]billing, len(c.pms))
		for i, pm := range c.pms {
			row[i] = billing{ent: -1, price: m.billed[pm.currency]}
			if e, ok := pm.ent[m.solution]; ok {
				row[i].ent = e
			}
		}
		c.billing = append(c.billing, row)
	}
	return c
}

// paymentMethodAt is the payment method a project is billed to at t (unix
// seconds), or -1 when it has none. The sports-live project moves from a
// USD method to an EUR one in the middle of a month.
func (c *catalog) paymentMethodAt(p int, t int64) int {
	pr := &c.projects[p]
	if pr.pmLater >= 0 && t >= c.switchAt.Unix() {
		return pr.pmLater
	}
	return pr.pm
}

// uuid derives a stable version-4-shaped UUID from the seed and a label.
func (c *catalog) uuid(label string) string {
	h := c.seed
	for i := 0; i < len(label); i++ {
		h = mix(h ^ uint64(label[i]))
	}
	a, b := mix(h^1), mix(h^2)
	a = a&^(0xf<<12) | 0x4<<12
	b = b&^(0x3<<62) | 0x2<<62
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
}

// mix is the splitmix64 finaliser: a cheap, well-spread hash, so every value
// of the hourly truth is computed on demand from its coordinates.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
