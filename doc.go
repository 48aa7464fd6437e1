// Package tally holds the domain Tally's parts share, free of HTTP and
// storage: the usage row (MeterData) and the reference types (payment
// methods, rate cards, projects, locations, the organization), the usage
// query, granularities and date windows, the window planner, exact decimals,
// a closed month's figures (CloseFigure), and the rules for the interface's
// address and resource paths.
//
// fetch speaks HTTP in these terms, store keeps them, reports and configs
// read them; none of those needs the HTTP client to name a window or a cost.
package tally
