package tally

import (
	"encoding/json"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// MeterData is one usage row as the interface reports it.
//
// Nullable text fields hold "" for null. DateProcessed is nil until the
// usage is charged; Price is nil when the interface sends none.
type MeterData struct {
	Date              time.Time  // bucket start, UTC
	DateProcessed     *time.Time // report time, truncated to the granularity; nil until charged
	MeterName         string
	MeterSku          string
	Family            string
	Solution          string
	Unit              string
	Quantity          float64
	Price             *float64 // cost ÷ quantity, as sent
	Cost              Decimal  // exact money in Currency
	Currency          string
	Entitlement       string
	EntitlementType   string
	PaymentMethod     string
	PaymentMethodName string
	Project           string
}

// Basis says which date a usage query filters on: the sample time ("usage")
// or the report time when the usage was charged ("reported",
// filterOnReportedDate).
type Basis string

const (
	BasisUsage    Basis = "usage"
	BasisReported Basis = "reported"
	// BasisEstimated rows are not the interface's costs: quantities from
	// the per-project usage report priced from the rate card.
	BasisEstimated Basis = "estimated"
)

// Usage sources (usage.source).
const (
	SourceOrganization = "organization" // the organization's usage report, with costs
	SourceProjects     = "projects"     // each project's report, quantities only, priced from the rate card
	SourceLake         = "lake"         // the lake's usage table, as the shards' exports committed it (no interface)
)

// ProjectUsage is one read of a project's usage report: the month to date
// per meter, quantities only.
type ProjectUsage struct {
	Project    string
	Start, End time.Time // the period it covers, as supplemental start and end (end exclusive)
	Meters     []ProjectMeterUsage
}

// ProjectMeterUsage is one meter's month to date in a ProjectUsage. The
// quantity is exact, as the JSON number's text.
type ProjectMeterUsage struct {
	MeterName, Unit, Solution, Family string
	Quantity                          Decimal
}

// Format is the answer format asked of the interface.
type Format string

const (
	FormatJSON Format = "json"
	FormatCSV  Format = "csv"
)

// UsageQuery is one usage request: a window plus the query's filters.
type UsageQuery struct {
	Window           Window
	Format           Format // json (default) or csv
	ReportedDate     bool   // filterOnReportedDate
	ProjectNames     []string
	PaymentMethodIDs []string
	MeterNames       []string
	// Organization is Tally's name for the organization whose token sends
	// the query (organizations[].name): the store keeps each
	// organization's rows and ledger apart by it. OrganizationID is its id
	// in the interface, when known.
	Organization, OrganizationID string
	// Stats, when set, is updated with the requests, retries and bytes the
	// query cost. It may be shared by concurrent queries.
	Stats *Stats
}

// Basis returns the date the query filters on.
func (q UsageQuery) Basis() Basis {
	if q.ReportedDate {
		return BasisReported
	}
	return BasisUsage
}

// Scope is a canonical text for the query's filters: "all" when there are
// none, otherwise e.g. "projects=a,b;meters=x". Two queries with the same
// scope, window and basis return the same rows, so the store replaces rows
// by (window, granularity, basis, scope).
func (q UsageQuery) Scope() string {
	var parts []string
	add := func(name string, vals []string) {
		if len(vals) == 0 {
			return
		}
		v := append([]string(nil), vals...)
		sort.Strings(v)
		parts = append(parts, name+"="+strings.Join(v, ","))
	}
	add("projects", q.ProjectNames)
	add("payment_methods", q.PaymentMethodIDs)
	add("meters", q.MeterNames)
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, ";")
}

// Stats counts what talking to the interface cost. Safe for concurrent use.
type Stats struct {
	Requests atomic.Int64
	Retries  atomic.Int64
	Bytes    atomic.Int64
}

// PaymentMethod is one payment method summary. The common fields are typed;
// Spec keeps the whole variant-specific spec, so a variant Tally does not
// know is kept, never rejected.
type PaymentMethod struct {
	ID                         string
	OrganizationID             string
	DisplayName                string
	Created                    *time.Time
	Type                       string // direct, marketplaceA, marketplaceB, or any other the interface sends
	AutoPurchaseStreamLicenses bool
	StartDate                  *time.Time // first valid day; nil: no lower bound
	EndDate                    *time.Time // first invalid day; nil: never expires
	ProductPublicationName     string
	SalesOrderNumber           string // direct only
	Notes                      string
	Projects                   []string // related.projects
	IsActive                   bool
	TermsAndConditionsAccepted bool
	Spec                       json.RawMessage // the whole spec as sent
	Raw                        json.RawMessage // the whole object as sent
}

// RateCard is one payment method's rate card.
type RateCard struct {
	PaymentMethodID        string
	ProductPublicationID   string
	ProductPublicationName string
	IsPrivateOffer         bool
	Currency               string
	Entries                []RateCardEntry
	Raw                    json.RawMessage
}

// RateCardEntry groups the prices of one family and solution.
type RateCardEntry struct {
	Family   string
	Solution string
	Prices   []RateCardPrice
}

// RateCardPrice is one priced item of a rate card. Price is exact: the JSON
// number is read as text.
type RateCardPrice struct {
	Name           string
	DisplayName    string
	Sku            string
	Unit           string
	Price          Decimal
	LocationPrices []LocationPrice
}

// LocationPrice is a price that applies to one location group.
type LocationPrice struct {
	LocationGroup string
	Sku           string
	Price         Decimal
}

// Project is one project the token can see.
type Project struct {
	ID                      string
	Name                    string
	DisplayName             string
	IsActive                bool
	LocationID              string
	LocationName            string
	AssignedPaymentMethodID string
	Raw                     json.RawMessage
}

// Location is one location projects can be created in.
type Location struct {
	ID          string
	Name        string
	DisplayName string
	Type        string // SaaS or Dedicated
	CloudName   string
	RegionName  string
	Raw         json.RawMessage
}

// Organization is the token's organization.
type Organization struct {
	ID   string
	Name string
	Raw  json.RawMessage
}
