package fetch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
	"github.com/tally-dev/tally/internal/secret"
)

// Benchmarks of the usage decoders and the paged usage stream, for
// profiling (go test -bench . -cpuprofile). scripts/bench.sh measures the
// whole fetch against DuckDB's own JSON reader.

var benchMeters = []struct{ name, sku, family, solution, unit string }{
	{"video_encoding_ondemand", "ENC-OD-SD-MIN", "Media Services", "Encoding", "minutes"},
	{"video_encoding_uhd", "ENC-UHD-MIN", "Media Services", "Encoding", "minutes"},
	{"live_channel_minutes", "LIVE-CH-MIN", "Media Services", "Streaming", "minutes"},
	{"streaming_egress_gb", "STR-EGRESS-GB", "Media Services", "Streaming", "gigabytes"},
	{"storage_gb_hours", "STO-GB-HR", "Media Services", "Storage", "gigabyte hours"},
	{"drm_license_requests", "", "Content Protection", "DRM", ""},
}

// benchStyle is how a bench page is written: pairs (above 0) is the
// number of distinct project–meter pairs the rows cycle through, 40
// meters to a project (the six above and variants of them; by default six
// meters and 224 projects); python lays it out as Python's json.dump does
// (", " and ": ", one line).
type benchStyle struct {
	pairs  int
	python bool
}

// benchRow is row i of the bench data: the interface's layout, a null
// dateProcessed, sku, unit or entitlement now and then.
func benchRow(i int, style benchStyle) (fields [numMeterFields]string, null [numMeterFields]bool) {
	m := benchMeters[i%len(benchMeters)]
	project := 1000 + i/len(benchMeters)%224
	if style.pairs > 0 {
		const meters = 40
		pair := i % style.pairs
		m = benchMeters[pair%meters%len(benchMeters)]
		if v := pair % meters / len(benchMeters); v > 0 {
			m.name += "_v" + strconv.Itoa(v)
		}
		project = 1000 + pair/meters
	}
	date := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i/1344) * time.Hour)
	q4 := int64(uint64(i)*0x9e3779b97f4a7c15>>20) % 100_000_000
	fields[fDate] = date.Format(time.RFC3339)
	fields[fDateProcessed] = date.Add(2 * time.Hour).Format(time.RFC3339)
	null[fDateProcessed] = i%50 == 0
	fields[fMeterName], fields[fMeterSku], fields[fFamily], fields[fSolution], fields[fUnit] = m.name, m.sku, m.family, m.solution, m.unit
	null[fMeterSku], null[fUnit] = m.sku == "", m.unit == ""
	fields[fQuantity] = fmt.Sprintf("%d.%04d", q4/10000, q4%10000)
	fields[fPrice] = "0.012500"
	fields[fCost] = fmt.Sprintf("%d.%010d", q4*12500/10_000_000_000, q4*12500%10_000_000_000)
	fields[fCurrency] = "USD"
	fields[fEntitlement] = "0f6c2a52-8d1e-4c55-9a43-1b7e2f0a9c01"
	fields[fEntitlementType] = "license"
	null[fEntitlement], null[fEntitlementType] = i%3 != 0, i%3 != 0
	fields[fPaymentMethod] = "2439471b-5002-49b6-84d1-8fb30e639959"
	fields[fPaymentMethodName] = "Marketplace B private offer"
	fields[fProject] = "project-" + strconv.Itoa(project)
	return fields, null
}

// benchPageJSON is a usage answer of rows [from, from+n), with next as its
// @odata.nextLink ("" for none).
func benchPageJSON(from, n int, next string) []byte {
	return benchPageJSONStyle(from, n, next, benchStyle{})
}

func benchPageJSONStyle(from, n int, next string, style benchStyle) []byte {
	item, key, line := ",", ":", "\n"
	if style.python {
		item, key, line = ", ", ": ", ""
	}
	var b bytes.Buffer
	b.WriteString(`{"value"` + key + `[`)
	for i := from; i < from+n; i++ {
		if i > from {
			b.WriteString(item)
		}
		b.WriteString(line + "{")
		fields, null := benchRow(i, style)
		for f := range numMeterFields {
			if f > 0 {
				b.WriteString(item)
			}
			b.WriteString(strconv.Quote(meterFieldNames[f]) + key)
			switch {
			case null[f]:
				b.WriteString("null")
			case f == fQuantity || f == fPrice:
				b.WriteString(fields[f])
			default:
				b.WriteString(strconv.Quote(fields[f]))
			}
		}
		b.WriteByte('}')
	}
	b.WriteString(line + "]" + item + `"supplemental"` + key + `{"records"` + key + strconv.Itoa(n) + item +
		`"start"` + key + `"2026-01-01"` + item + `"end"` + key + `"2026-02-01"` + item + `"format"` + key + `"json"` + item +
		`"granularity"` + key + `"hour"` + item + `"groupBy"` + key + `["meter"]}`)
	if next != "" {
		b.WriteString(item + `"@odata.nextLink"` + key + strconv.Quote(next))
	}
	b.WriteString("}\n")
	return b.Bytes()
}

func benchPageCSV(n int) []byte {
	var b bytes.Buffer
	b.WriteString(strings.Join(meterFieldNames[:], ",") + "\n")
	for i := range n {
		fields, null := benchRow(i, benchStyle{})
		for f := range numMeterFields {
			if f > 0 {
				b.WriteByte(',')
			}
			if !null[f] {
				b.WriteString(fields[f])
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func benchDecode(b *testing.B, page []byte, csv bool, rows int) {
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		p := newUsagePage(context.Background(), io.NopCloser(bytes.NewReader(page)), nil, csv)
		n := 0
		for {
			_, ok, err := p.next()
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
			n++
		}
		if n != rows {
			b.Fatalf("decoded %d rows, want %d", n, rows)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkDecodeJSON decodes one page of 10,000 rows.
func BenchmarkDecodeJSON(b *testing.B) {
	benchDecode(b, benchPageJSON(0, 10_000, ""), false, 10_000)
}

// BenchmarkDecodeJSONPython decodes a page as Python's json.dump writes
// it, of 1,360 project–meter pairs (34 projects × 40 meters).
func BenchmarkDecodeJSONPython(b *testing.B) {
	page := benchPageJSONStyle(0, 10_000, "", benchStyle{pairs: 1360, python: true})
	benchDecode(b, page, false, 10_000)
}

// BenchmarkDecodeCSV decodes the same rows as CSV.
func BenchmarkDecodeCSV(b *testing.B) {
	benchDecode(b, benchPageCSV(10_000), true, 10_000)
}

// BenchmarkUsage streams 10 pages of 10,000 rows linked by @odata.nextLink
// from a loopback server through Client.Usage.
func BenchmarkUsage(b *testing.B) {
	const pages, size = 10, 10_000
	bodies := make([][]byte, pages)
	for p := range pages {
		next := ""
		if p+1 < pages {
			next = "/usage?page=" + strconv.Itoa(p+2)
		}
		bodies[p] = benchPageJSON(p*size, size, next)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := strconv.Atoi(r.URL.Query().Get("page"))
		w.Header().Set("Content-Type", "application/json")
		w.Write(bodies[max(p, 1)-1])
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, secret.New("bench"), WithPaths(map[string]string{"usage": "/usage"}))
	if err != nil {
		b.Fatal(err)
	}
	q := tally.UsageQuery{Window: tally.Window{Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), Granularity: tally.Hour}}
	var total int64
	for _, body := range bodies {
		total += int64(len(body))
	}
	b.SetBytes(total)
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, err := range c.Usage(context.Background(), q) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != pages*size {
			b.Fatalf("streamed %d rows, want %d", n, pages*size)
		}
	}
	b.ReportMetric(float64(pages*size)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
