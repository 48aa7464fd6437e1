package tally

import (
	"encoding/json"
	"errors"
	"math/big"
	"testing"
)

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		in    string
		want  string // String() of the result
		scale int
	}{
		{"0", "0", 0},
		{"12.3400", "12.3400", 4},
		{"-0.5", "-0.5", 1},
		{"+7", "7", 0},
		{"1e-3", "0.001", 3},
		{"1E3", "1000", 0},
		{"1.5e2", "150", 0},
		{"2.50e-1", "0.250", 3},
		{".5", "0.5", 1},
		{"5.", "5", 0},
		{"-0.00", "0.00", 2},
		{"000123.4500", "123.4500", 4},
		{"123456789012345678901234567890.123456789", "123456789012345678901234567890.123456789", 9},
		{"-0.000001", "-0.000001", 6},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d, err := ParseDecimal(tt.in)
			if err != nil {
				t.Fatalf("ParseDecimal(%q): %v", tt.in, err)
			}
			if got := d.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if d.Scale() != tt.scale {
				t.Errorf("Scale() = %d, want %d", d.Scale(), tt.scale)
			}
		})
	}
}

func TestParseDecimalRejects(t *testing.T) {
	for _, in := range []string{"", " ", "-", "+", ".", "-.", "e3", "1e", "1e+", "abc", "1.2.3", "1,5", "NaN", "Inf", "-Infinity",
		"0x10", "1_000", " 1", "1 ", "--1", "+-1", "1e1001", "1e-1001", "１２", "1e99999999999"} {
		t.Run(in, func(t *testing.T) {
			if d, err := ParseDecimal(in); err == nil {
				t.Fatalf("ParseDecimal(%q) = %s, want an error", in, d)
			} else if !errors.Is(err, errNotDecimal) {
				t.Errorf("error %v does not wrap errNotDecimal", err)
			}
		})
	}
}

func TestDecimalScaled(t *testing.T) {
	tests := []struct {
		in      string
		scale   int
		want    string
		wantErr bool
	}{
		{"12.34", 4, "123400", false},
		{"12.3400", 2, "1234", false},
		{"12.3401", 2, "", true},
		{"-0.5", 6, "-500000", false},
		{"-0.05", 1, "", true},
		{"7", 0, "7", false},
		{"1e-3", 3, "1", false},
		{"0.000", 0, "0", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, err := MustDecimal(tt.in).Scaled(tt.scale)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Scaled(%d) = %s, want an error (no silent rounding)", tt.scale, v)
				}
				return
			}
			if err != nil {
				t.Fatalf("Scaled(%d): %v", tt.scale, err)
			}
			if v.String() != tt.want {
				t.Errorf("Scaled(%d) = %s, want %s", tt.scale, v, tt.want)
			}
		})
	}
}

func TestDecimalAddAndCmp(t *testing.T) {
	tests := []struct{ a, b, sum string }{
		{"0.1", "0.2", "0.3"},
		{"12.3400", "0.66", "13.0000"},
		{"-1.5", "1.5", "0.0"},
		{"1e-3", "2", "2.001"},
		{"99999999999999999999.99", "0.01", "100000000000000000000.00"},
		{"-0.004", "-0.0006", "-0.0046"},
	}
	for _, tt := range tests {
		t.Run(tt.a+"+"+tt.b, func(t *testing.T) {
			a, b := MustDecimal(tt.a), MustDecimal(tt.b)
			if got := a.Add(b).String(); got != tt.sum {
				t.Errorf("%s + %s = %s, want %s", tt.a, tt.b, got, tt.sum)
			}
			if got := b.Add(a).String(); got != tt.sum {
				t.Errorf("%s + %s = %s, want %s", tt.b, tt.a, got, tt.sum)
			}
			// The operands are unchanged.
			if a.String() != MustDecimal(tt.a).String() || b.String() != MustDecimal(tt.b).String() {
				t.Errorf("Add changed its operands: %s, %s", a, b)
			}
		})
	}
	// Summing many cents stays exact where a float drifts.
	sum := MustDecimal("0")
	for range 1000 {
		sum = sum.Add(MustDecimal("0.01"))
	}
	if sum.Cmp(MustDecimal("10")) != 0 || sum.String() != "10.00" {
		t.Errorf("1000 × 0.01 = %s, want 10.00", sum)
	}
	cmps := []struct {
		a, b string
		want int
	}{{"1.0", "1", 0}, {"1.01", "1.1", -1}, {"-2", "-3", 1}, {"0", "-0.000", 0}}
	for _, c := range cmps {
		if got := MustDecimal(c.a).Cmp(MustDecimal(c.b)); got != c.want {
			t.Errorf("Cmp(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestDecimalJSONText(t *testing.T) {
	var v struct{ Cost Decimal }
	if err := json.Unmarshal([]byte(`{"Cost":"12.3400"}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.Cost.String() != "12.3400" {
		t.Errorf("decoded %s, want 12.3400", v.Cost)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"Cost":"12.3400"}` {
		t.Errorf("encoded %s", out)
	}
}

// A copy of a Decimal shares its digits with the original; filling the copy
// must not change the original, and a failed fill must not change the copy.
func TestDecimalUnmarshalTextDoesNotAlias(t *testing.T) {
	orig := MustDecimal("123456789123456789123456789.5")
	cp := orig
	if err := cp.UnmarshalText([]byte("987654321987654321987654321.25")); err != nil {
		t.Fatal(err)
	}
	if orig.String() != "123456789123456789123456789.5" {
		t.Errorf("original changed to %s", orig)
	}
	if cp.String() != "987654321987654321987654321.25" {
		t.Errorf("copy is %s", cp)
	}
	if err := cp.UnmarshalText([]byte("12x")); err == nil {
		t.Fatal("want an error for 12x")
	}
	if cp.String() != "987654321987654321987654321.25" {
		t.Errorf("failed UnmarshalText left %s", cp)
	}
}

func TestNewDecimalAndRat(t *testing.T) {
	d := NewDecimal(big.NewInt(-12345), 3)
	if d.String() != "-12.345" {
		t.Errorf("NewDecimal = %s", d)
	}
	if NewDecimal(big.NewInt(5), -2).String() != "500" {
		t.Errorf("negative scale: %s", NewDecimal(big.NewInt(5), -2))
	}
	if r := MustDecimal("0.25").Rat(); r.Cmp(big.NewRat(1, 4)) != 0 {
		t.Errorf("Rat = %s", r)
	}
	if f := MustDecimal("2.5").Float64(); f != 2.5 {
		t.Errorf("Float64 = %v", f)
	}
}
