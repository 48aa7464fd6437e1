package tally

import (
	"strings"
	"testing"
	"time"
)

func TestParseDate(t *testing.T) {
	got, err := ParseDate("2024-02-29")
	if err != nil || !got.Equal(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)) || got.Location() != time.UTC {
		t.Errorf("ParseDate(2024-02-29) = %s, %v", got, err)
	}
	for _, s := range []string{"", "2026-02-29", "2026-13-01", "2026-1-01", "26-01-01", "2026/01/01", "2026-01-01T00:00:00Z", " 2026-01-01"} {
		_, err := ParseDate(s)
		if err == nil || !strings.Contains(err.Error(), `"`+s+`"`) || !strings.Contains(err.Error(), "YYYY-MM-DD") {
			t.Errorf("ParseDate(%q) error = %v, want one naming the value and the format", s, err)
		}
	}
}

func TestWindowValidate(t *testing.T) {
	ok := []Window{
		{date("2026-01-01"), date("2026-02-01"), Hour},
		{date("2026-02-01"), date("2026-03-04"), Hour}, // 31 days
		{date("2026-01-01"), date("2026-01-02"), Hour},
		{date("2026-01-01"), date("2027-01-01"), Day},
		{date("2024-02-29"), date("2025-02-28"), Day},
		{date("2026-01-05"), date("2036-01-07"), Week},
		{date("2020-01-01"), date("2030-02-01"), Month},
		{date("2000-01-01"), date("2100-01-01"), Year},
	}
	for _, w := range ok {
		if err := w.Validate(); err != nil {
			t.Errorf("%s %s: %v", w, w.Granularity, err)
		}
	}
	bad := []struct {
		w    Window
		want string
	}{
		{Window{date("2026-01-01"), date("2026-02-02"), Hour}, "no later than 2026-02-01"},
		{Window{date("2026-01-01"), date("2027-01-02"), Day}, "no later than 2027-01-01"},
		{Window{date("2026-01-02"), date("2026-01-02"), Day}, "end must be after start"},
		{Window{date("2026-01-02"), date("2026-01-01"), Day}, "end must be after start"},
		{Window{date("2026-01-01").Add(time.Hour), date("2026-01-03"), Hour}, "day boundaries"},
		{Window{date("2026-01-06"), date("2026-01-12"), Week}, "week boundaries"},
		{Window{date("2026-01-05"), date("2026-01-13"), Week}, "week boundaries"},
		{Window{date("2026-01-01"), date("2026-02-15"), Month}, "month boundaries"},
		{Window{date("2026-02-01"), date("2027-01-01"), Year}, "year boundaries"},
		{Window{date("2026-01-01"), date("2026-01-02"), "minute"}, `"minute" is not one of`},
	}
	for _, tc := range bad {
		err := tc.w.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.w.String()) {
			t.Errorf("%s %s: Validate() = %v, want an error naming the window and containing %q", tc.w, tc.w.Granularity, err, tc.want)
		}
	}
}

func TestWindowStringContains(t *testing.T) {
	w := Window{date("2026-10-01"), date("2026-11-01"), Hour}
	if got := w.String(); got != "2026-10-01..2026-11-01" {
		t.Errorf("String() = %q", got)
	}
	for at, want := range map[time.Time]bool{
		date("2026-09-30").Add(23 * time.Hour): false,
		date("2026-10-01"):                     true,
		date("2026-10-31").Add(23 * time.Hour): true,
		date("2026-11-01"):                     false,
	} {
		if got := w.Contains(at); got != want {
			t.Errorf("Contains(%s) = %v, want %v", at, got, want)
		}
	}
}

func TestWindowBucketsSplit(t *testing.T) {
	tests := []struct {
		w       Window
		buckets int
		mid     string // "" when it cannot split
	}{
		{Window{date("2026-01-01"), date("2026-02-01"), Hour}, 31, "2026-01-16"},
		{Window{date("2026-01-01"), date("2026-01-02"), Hour}, 1, ""},
		{Window{date("2024-01-01"), date("2025-01-01"), Day}, 366, "2024-07-02"},
		{Window{date("2026-01-05"), date("2026-02-02"), Week}, 4, "2026-01-19"},
		{Window{date("2026-01-01"), date("2026-04-01"), Month}, 3, "2026-02-01"},
		{Window{date("2020-01-01"), date("2021-01-01"), Year}, 1, ""},
	}
	for _, tc := range tests {
		if got := tc.w.Buckets(); got != tc.buckets {
			t.Errorf("%s %s: Buckets() = %d, want %d", tc.w, tc.w.Granularity, got, tc.buckets)
		}
		a, b, ok := tc.w.Split()
		if tc.mid == "" {
			if ok || a != tc.w {
				t.Errorf("%s: Split() = %s, %s, %v; want the window and false", tc.w, a, b, ok)
			}
			continue
		}
		if !ok || !a.Start.Equal(tc.w.Start) || !a.End.Equal(date(tc.mid)) || !b.Start.Equal(date(tc.mid)) || !b.End.Equal(tc.w.End) ||
			a.Granularity != tc.w.Granularity || b.Granularity != tc.w.Granularity {
			t.Errorf("%s: Split() = %s, %s, %v; want halves at %s", tc.w, a, b, ok, tc.mid)
		}
		if a.Validate() != nil || b.Validate() != nil || a.Buckets()+b.Buckets() != tc.buckets {
			t.Errorf("%s: halves %s and %s are not valid windows of the same buckets", tc.w, a, b)
		}
	}
}
