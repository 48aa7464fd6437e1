// Package sim owns a simulated management interface: an http.Handler that
// serves the resources Tally reads (usage, payment methods, rate cards,
// projects, locations, the organization) with the shapes, limits and error
// bodies of the seed and API-NOTES.md.
//
// Its data is a function of a seed and a clock. One hourly truth (a quantity
// and an exact cost for every active project and meter in every hour) is
// computed on demand, never stored, and every granularity is an exact sum of
// it, so a year of data is cheap to serve and Truth and Rows can state what
// any query must return. Charges arrive late: an hour's row stays provisional
// (dateProcessed null, a smaller quantity and cost) until the clock passes
// the hour's charge time, so advancing the clock revises recent rows.
//
// Faults (429 with and without Retry-After, 5xx, cut bodies, slow answers,
// refused ranges) are drawn per request from their own seeded generator.
// A faulty answer is an error, a delay or a truncated body, never wrong data.
package sim
