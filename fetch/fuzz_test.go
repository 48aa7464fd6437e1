package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tally-dev/tally"
)

// Seed corpora live in testdata/fuzz/<Name>/; `go test` runs them as
// regression cases, `go test -fuzz=<Name>` explores from them.

// checkDecodedRow holds for every row a decoder lets through, whatever the
// input: required fields were present, times are UTC, the cost round-trips.
func checkDecodedRow(t *testing.T, md tally.MeterData) {
	t.Helper()
	if md.Date.Location() != time.UTC || md.DateProcessed != nil && md.DateProcessed.Location() != time.UTC {
		t.Fatalf("times not in UTC: %v %v", md.Date, md.DateProcessed)
	}
	back, err := tally.ParseDecimal(md.Cost.String())
	if err != nil || back.Cmp(md.Cost) != 0 || back.String() != md.Cost.String() {
		t.Fatalf("cost %s does not round-trip: %v", md.Cost, err)
	}
	if md.Price != nil && (*md.Price != *md.Price) {
		t.Fatalf("price NaN")
	}
	for _, s := range []string{md.MeterName, md.MeterSku, md.Family, md.Solution, md.Unit, md.Currency, md.Entitlement,
		md.EntitlementType, md.PaymentMethod, md.PaymentMethodName, md.Project} {
		if strings.ContainsRune(s, utf8.RuneError) {
			t.Fatalf("text %q let through: not UTF-8, or U+FFFD", s)
		}
	}
}

func fuzzUsage(t *testing.T, data []byte, csv bool) {
	p := newUsagePage(context.Background(), io.NopCloser(bytes.NewReader(data)), nil, csv)
	defer p.close()
	for range 100000 {
		md, ok, err := p.next()
		if err != nil || !ok {
			// After the end or an error, the page stays where it is.
			_, again, err2 := p.next()
			if again || (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
				t.Fatalf("after (%v, %v): (%v, %v)", ok, err, again, err2)
			}
			return
		}
		checkDecodedRow(t, md)
	}
}

func FuzzDecodeUsageJSON(f *testing.F) {
	f.Add([]byte(`{"value":[` + fullRowJSON + `],"@odata.nextLink":"/next"}`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzUsage(t, data, false) })
}

func FuzzDecodeUsageCSV(f *testing.F) {
	f.Add([]byte("date,meterName,cost,currency,quantity\n2026-10-01,m,1.5,EUR,2\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzUsage(t, data, true) })
}

// FuzzDecodeList feeds one input to every list and document decoder.
func FuzzDecodeList(f *testing.F) {
	f.Add([]byte(`{"value":[` + pmJSON(1, `{"type":"direct"}`) + `],"supplemental":{"pagination":{"total":1}}}`))
	f.Add([]byte(rateCardBody))
	f.Fuzz(func(t *testing.T, data []byte) {
		if lp, err := decodeListPage(bytes.NewReader(data), 0, decodePaymentMethod); err == nil {
			for _, pm := range lp.items {
				if pm.ID == "" || pm.Type == "" || !json.Valid(pm.Raw) {
					t.Fatalf("payment method let through: %+v", pm)
				}
			}
			if lp.total < 0 {
				t.Fatalf("total %d", lp.total)
			}
		}
		if lp, err := decodeListPage(bytes.NewReader(data), 0, decodeProject); err == nil {
			for _, p := range lp.items {
				if p.ID == "" {
					t.Fatalf("project without id: %+v", p)
				}
			}
		}
		if lp, err := decodeListPage(bytes.NewReader(data), 0, decodeLocation); err == nil {
			for _, l := range lp.items {
				if l.ID == "" && l.Name == "" {
					t.Fatalf("location without id or name: %+v", l)
				}
			}
		}
		if json.Valid(data) {
			if rc, err := decodeRateCard(data); err == nil {
				for _, e := range rc.Entries {
					for _, p := range e.Prices {
						if _, err := tally.ParseDecimal(p.Price.String()); err != nil {
							t.Fatalf("price %s does not round-trip", p.Price)
						}
					}
				}
			}
			if o, err := decodeOrganization(data); err == nil && o.ID == "" {
				t.Fatalf("organization without id")
			}
			_, _ = decodePaymentMethod(data, 0)
		}
	})
}
