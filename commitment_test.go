package tally

import (
	"testing"
	"time"
)

func TestCommitmentRunOut(t *testing.T) {
	day := func(s string) time.Time {
		d, err := time.Parse(DateLayout, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	c := CommitmentTerms{Category: CommitmentCategorySpend, Size: MustDecimal("1000"), Currency: "USD",
		Start: day("2026-09-01"), End: day("2026-12-31")}
	oct, nov := day("2026-10-01"), day("2026-11-01")
	for _, tc := range []struct {
		name            string
		toDate, month   string
		want            string // "" for none
		used, runsEarly bool
	}{
		// 310 over October's 31 days is 10 a day; 600 left lasts 60 days
		// after October 31: December 30, before its end.
		{"before its end", "400", "310", "2026-12-30", false, true},
		// 600 left at 5 a day is 120 days: past December 31.
		{"lasts past its end", "400", "155", "", false, false},
		// 620 left at 10 a day is 62 days: January 1, the day after its end.
		{"the day after its end", "380", "310", "", false, false},
		// 610 left at 10 a day: 61 days, December 31 exactly.
		{"on its last day", "390", "310", "2026-12-31", false, true},
		{"nothing drawn this month", "400", "0", "", false, false},
		{"used up", "1000.01", "310", "", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, used, early := c.RunOut(MustDecimal(tc.toDate), MustDecimal(tc.month), oct, nov)
			want := time.Time{}
			if tc.want != "" {
				want = day(tc.want)
			}
			if !got.Equal(want) || used != tc.used || early != tc.runsEarly {
				t.Errorf("RunOut = %s, used %v, before its end %v; want %s, %v, %v", got.Format(DateLayout), used, early, tc.want, tc.used, tc.runsEarly)
			}
		})
	}
	if r := c.Remaining(MustDecimal("400.125")); r.String() != "599.875" {
		t.Errorf("Remaining = %s, want 599.875", r)
	}
	if r := c.Remaining(MustDecimal("1000.5")); r.String() != "-0.5" {
		t.Errorf("Remaining = %s, want -0.5", r)
	}
}
