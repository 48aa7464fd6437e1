package fetch

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// fingerprint is md's fingerprint by a fingerprinter that has seen no
// text before.
func fingerprint(md *tally.MeterData) uint64 { return new(fingerprinter).row(md) }

// fpSample is a row with every field the interface sends set.
func fpSample(t testing.TB) tally.MeterData {
	processed := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	price := 0.25
	cost, err := tally.ParseDecimal("1.2500")
	if err != nil {
		t.Fatal(err)
	}
	return tally.MeterData{Date: time.Date(2026, 3, 1, 5, 0, 0, 0, time.UTC), DateProcessed: &processed,
		MeterName: "Encoding", MeterSku: "enc-1", Family: "Media", Solution: "Streaming", Unit: "GB",
		Quantity: 5, Price: &price, Cost: cost, Currency: "USD", Entitlement: "e", EntitlementType: "et",
		PaymentMethod: "pm-1", PaymentMethodName: "Card", Project: "alpha"}
}

// A re-read page's row is the same row only if every field is: changing
// any one of them, or moving a text's end from one field to the next,
// changes its fingerprint.
func TestFingerprintSeesEveryField(t *testing.T) {
	base := fpSample(t)
	want := fingerprint(&base)
	if again := fpSample(t); fingerprint(&again) != want {
		t.Fatal("the same row fingerprints differently")
	}
	other := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
	otherPrice := 0.5
	big, err := tally.ParseDecimal("123456789012345678901234.5")
	if err != nil {
		t.Fatal(err)
	}
	scaled, err := tally.ParseDecimal("1.25")
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string]func(*tally.MeterData){
		"date":                func(md *tally.MeterData) { md.Date = md.Date.Add(time.Hour) },
		"date_processed":      func(md *tally.MeterData) { md.DateProcessed = &other },
		"no date_processed":   func(md *tally.MeterData) { md.DateProcessed = nil },
		"meter_name":          func(md *tally.MeterData) { md.MeterName += "x" },
		"meter_sku":           func(md *tally.MeterData) { md.MeterSku = "" },
		"family":              func(md *tally.MeterData) { md.Family = "Other" },
		"solution":            func(md *tally.MeterData) { md.Solution = "streaming" },
		"unit":                func(md *tally.MeterData) { md.Unit = "TB" },
		"quantity":            func(md *tally.MeterData) { md.Quantity = 6 },
		"price":               func(md *tally.MeterData) { md.Price = &otherPrice },
		"no price":            func(md *tally.MeterData) { md.Price = nil },
		"cost":                func(md *tally.MeterData) { md.Cost = big },
		"cost's scale":        func(md *tally.MeterData) { md.Cost = scaled },
		"currency":            func(md *tally.MeterData) { md.Currency = "EUR" },
		"entitlement":         func(md *tally.MeterData) { md.Entitlement = "" },
		"entitlement_type":    func(md *tally.MeterData) { md.EntitlementType = "" },
		"payment_method":      func(md *tally.MeterData) { md.PaymentMethod = "pm-2" },
		"payment_method_name": func(md *tally.MeterData) { md.PaymentMethodName = "Cash" },
		"project":             func(md *tally.MeterData) { md.Project = "beta" },
		"a text's end moved":  func(md *tally.MeterData) { md.MeterName, md.MeterSku = "Encodingenc", "-1" },
	}
	for name, change := range changes {
		md := fpSample(t)
		change(&md)
		if fingerprint(&md) == want {
			t.Errorf("%s changed, the fingerprint did not", name)
		}
	}
}

// A fingerprinter remembers texts by where they are held: the same row
// read again, its texts held elsewhere (another decoder's strings), or
// after other rows whose texts took the same places in its memory, has
// the fingerprint a fresh one gives; and a text remembered is never
// taken for another of its length.
func TestFingerprintOfTextsHeldElsewhere(t *testing.T) {
	f := new(fingerprinter)
	base := fpSample(t)
	want := fingerprint(&base)
	if got := f.row(&base); got != want {
		t.Fatal("a fingerprinter gives another fingerprint than a fresh one")
	}
	held := func(md tally.MeterData) tally.MeterData {
		for _, p := range []*string{&md.MeterName, &md.MeterSku, &md.Family, &md.Solution, &md.Unit, &md.Currency,
			&md.Entitlement, &md.EntitlementType, &md.PaymentMethod, &md.PaymentMethodName, &md.Project} {
			*p = strings.Clone(*p)
		}
		return md
	}
	// Rows of many texts of one length, each held in memory of its own:
	// every slot taken over and again.
	for i := range 20 * fpSlots {
		md := held(base)
		md.MeterName = fmt.Sprintf("m%07d", i)
		md.Project = fmt.Sprintf("p%07d", i%97)
		if got, want := f.row(&md), fingerprint(&md); got != want {
			t.Fatalf("row %d: %x, a fresh fingerprinter %x", i, got, want)
		}
	}
	again := held(base)
	if got := f.row(&again); got != want {
		t.Fatal("the row read again, its texts held elsewhere, fingerprints differently")
	}
	if got := f.row(&base); got != want {
		t.Fatal("the row fingerprints differently after others")
	}
}

// BenchmarkFingerprint is the cost a row handed on pays for a page's
// possible re-read: its texts shared with the rows before, as the
// decoder hands them on.
func BenchmarkFingerprint(b *testing.B) {
	md := fpSample(b)
	f := new(fingerprinter)
	var sum uint64
	for b.Loop() {
		sum += f.row(&md)
	}
	_ = sum
}
