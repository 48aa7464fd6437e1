package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

func rateCard(pm string, price, euPrice string) tally.RateCard {
	return tally.RateCard{
		PaymentMethodID: pm, ProductPublicationID: "pub-" + pm, ProductPublicationName: "Standard", Currency: "USD",
		Entries: []tally.RateCardEntry{{Family: "video", Solution: "encoding", Prices: []tally.RateCardPrice{{
			Name: "advanced_sd(video_encoding_ondemand)", DisplayName: "Advanced SD", Sku: "SKU-ENC", Unit: "minutes",
			Price: tally.MustDecimal(price),
			LocationPrices: []tally.LocationPrice{
				{LocationGroup: "eu", Price: tally.MustDecimal(euPrice)},
				{LocationGroup: "us", Sku: "SKU-ENC-US", Price: tally.MustDecimal("0.5")},
			},
		}}}},
		Raw: json.RawMessage(`{"kind":"RateCard"}`),
	}
}

func TestSnapshotsAndViewsShowTheLatest(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	t1 := time.Date(2026, 1, 1, 2, 30, 0, 123456789, time.UTC)
	t2 := t1.Add(24 * time.Hour)
	valid := date(t, "2026-01-01")
	first := Reference{
		Organization: &tally.Organization{ID: "org-1", Name: "Acme", Raw: json.RawMessage(`{"metadata":{"id":"org-1"}}`)},
		PaymentMethods: []tally.PaymentMethod{
			{ID: "pm-a", DisplayName: "Direct A", Type: "direct", StartDate: &valid, Projects: []string{"a", "b"}, IsActive: true,
				SalesOrderNumber: "SO-1", Spec: json.RawMessage(`{"type":"direct","salesOrderNumber":"SO-1"}`)},
			{ID: "pm-b", DisplayName: "Market B", Type: "someNewMarketplace", IsActive: true,
				Spec: json.RawMessage(`{"type":"someNewMarketplace","unknownField":{"deep":[1,2]}}`)},
		},
		RateCards: []tally.RateCard{rateCard("pm-a", "0.012345678901", "0.02"), rateCard("pm-b", "1", "2")},
		Projects:  []tally.Project{{ID: "p-a", Name: "a", IsActive: true, LocationName: "eu-west"}, {ID: "p-b", Name: "b"}},
		Locations: []tally.Location{{ID: "l-1", Name: "eu-west", Type: "SaaS", CloudName: "cloud", RegionName: "west"}},
	}
	run1 := NewRunID()
	if err := s.SaveSnapshot(ctx, run1, t1, first); err != nil {
		t.Fatal(err)
	}
	// The second fetch got payment method a only, its rate card only (b's
	// failed) and the projects; no locations and no organization.
	second := Reference{
		PaymentMethods: []tally.PaymentMethod{{ID: "pm-a", DisplayName: "Direct A (renamed)", Type: "direct"}},
		RateCards:      []tally.RateCard{rateCard("pm-a", "0.013", "0.021")},
		Projects:       []tally.Project{{ID: "p-c", Name: "c"}},
	}
	if err := s.SaveSnapshot(ctx, NewRunID(), t2, second); err != nil {
		t.Fatal(err)
	}

	res, err := s.Query(ctx, `SELECT id, display_name, snapshot_at FROM payment_methods ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0][1] != "Direct A (renamed)" || !res.Rows[0][2].(time.Time).Equal(t2.Truncate(time.Microsecond)) {
		t.Fatalf("payment_methods = %v, want the second snapshot only", res.Rows)
	}
	res, err = s.Query(ctx, `SELECT payment_method_id, coalesce(location_group, '-'), sku, price FROM rate_card_prices ORDER BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rows {
		got = append(got, r[0].(string)+" "+r[1].(string)+" "+r[2].(string)+" "+mustDecimal(t, r[3]).String())
	}
	equalLines(t, "rate_card_prices", got, []string{
		"pm-a - SKU-ENC 0.013000000000",
		"pm-a eu SKU-ENC 0.021000000000",
		"pm-a us SKU-ENC-US 0.500000000000",
		// b's card is still the first snapshot's: the second run lacked it.
		"pm-b - SKU-ENC 1.000000000000",
		"pm-b eu SKU-ENC 2.000000000000",
		"pm-b us SKU-ENC-US 0.500000000000",
	})
	if names := scalar(t, s, `SELECT string_agg(name, ',' ORDER BY name) FROM projects`); names != "c" {
		t.Fatalf("projects = %v, want c", names)
	}
	if n := count(t, s, `SELECT count(*) FROM locations WHERE name = 'eu-west' AND type = 'SaaS'`); n != 1 {
		t.Fatalf("locations lost the first snapshot: %d rows", n)
	}
	if name := scalar(t, s, `SELECT name FROM organization`); name != "Acme" {
		t.Fatalf("organization = %v", name)
	}

	// Older snapshots stay: a report for an old month uses them.
	res, err = s.Query(ctx, `SELECT type, projects, spec->>'$.unknownField.deep[1]', start_date, end_date, run_id
FROM payment_method_snapshots WHERE snapshot_at = ? ORDER BY id`, t1.Truncate(time.Microsecond))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 {
		t.Fatalf("first snapshot has %d payment methods, want 2", len(res.Rows))
	}
	if p := res.Rows[0][1].([]any); len(p) != 2 || p[0] != "a" || p[1] != "b" {
		t.Errorf("projects = %v", p)
	}
	if d := res.Rows[0][3].(time.Time); !d.Equal(valid) || res.Rows[0][4] != nil {
		t.Errorf("validity = %v .. %v, want 2026-01-01 .. NULL", res.Rows[0][3], res.Rows[0][4])
	}
	if res.Rows[1][0] != "someNewMarketplace" || res.Rows[1][2] != "2" {
		t.Errorf("unknown variant not kept whole: %v", res.Rows[1])
	}
	if id, _ := CellText(res.Rows[0][5], res.Types[5]); id != run1.String() {
		t.Errorf("run_id = %s, want %s", id, run1)
	}
}

func TestSnapshotRefusesAnInexactPriceWhole(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	err := s.SaveSnapshot(ctx, NewRunID(), time.Now(), Reference{
		Organization: &tally.Organization{ID: "org-1", Name: "Acme"},
		RateCards:    []tally.RateCard{rateCard("pm-a", "0.1", "0.0000000000001")},
	})
	mustContain(t, err, "pm-a", "advanced_sd(video_encoding_ondemand)", `location group "eu"`, "0.0000000000001", "more than 12 decimal places")
	for _, table := range []string{"organization_snapshots", "rate_card_price_snapshots"} {
		if n := count(t, s, `SELECT count(*) FROM `+table); n != 0 {
			t.Errorf("%s has %d rows after a failed snapshot, want 0", table, n)
		}
	}
	err = s.SaveSnapshot(ctx, NewRunID(), time.Now(), Reference{
		Projects: []tally.Project{{Name: "a", Raw: json.RawMessage(`{not json`)}},
	})
	if err == nil || !strings.Contains(err.Error(), "project_snapshots") {
		t.Fatalf("invalid raw JSON: %v", err)
	}
}
