package fetch

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Decimal is an exact decimal number: Unscaled × 10^-Scale. Costs are money
// and never pass through a float.
type Decimal struct {
	unscaled big.Int
	scale    int32
}

// ParseDecimal parses the interface's decimal text ("12.3400", "-0.5",
// "1e-3"). Anything else, including NaN, infinities and empty text, is an
// error.
func ParseDecimal(s string) (Decimal, error) {
	var d Decimal
	if err := d.parse(s); err != nil {
		return Decimal{}, err
	}
	return d, nil
}

// MustDecimal is ParseDecimal for constants in tests and simulations.
func MustDecimal(s string) Decimal {
	d, err := ParseDecimal(s)
	if err != nil {
		panic(err)
	}
	return d
}

var errNotDecimal = errors.New("not a decimal number")

func (d *Decimal) parse(s string) error {
	body := s
	exp := int64(0)
	if i := strings.IndexAny(body, "eE"); i >= 0 {
		e, err := strconv.ParseInt(body[i+1:], 10, 32)
		if err != nil || e > 1000 || e < -1000 {
			return fmt.Errorf("%q: %w", s, errNotDecimal)
		}
		exp = e
		body = body[:i]
	}
	neg := false
	if strings.HasPrefix(body, "-") || strings.HasPrefix(body, "+") {
		neg = body[0] == '-'
		body = body[1:]
	}
	intPart, frac, hasDot := strings.Cut(body, ".")
	if intPart == "" && frac == "" || hasDot && frac == "" && intPart == "" {
		return fmt.Errorf("%q: %w", s, errNotDecimal)
	}
	digits := intPart + frac
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return fmt.Errorf("%q: %w", s, errNotDecimal)
		}
	}
	if _, ok := d.unscaled.SetString(digits, 10); !ok {
		return fmt.Errorf("%q: %w", s, errNotDecimal)
	}
	if neg {
		d.unscaled.Neg(&d.unscaled)
	}
	scale := int64(len(frac)) - exp
	if scale < 0 {
		d.unscaled.Mul(&d.unscaled, pow10(int(-scale)))
		scale = 0
	}
	d.scale = int32(scale)
	return nil
}

// UnmarshalText lets encoding/json and CSV decoding fill a Decimal. It
// parses into a fresh value: a Decimal copied by value shares its digits
// with the original, and parsing in place would change both (and would
// leave d half-written on an error).
func (d *Decimal) UnmarshalText(b []byte) error {
	var n Decimal
	if err := n.parse(string(b)); err != nil {
		return err
	}
	*d = n
	return nil
}

// MarshalText writes the exact decimal text.
func (d Decimal) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Scale is the number of digits after the decimal point as written.
func (d Decimal) Scale() int { return int(d.scale) }

// IsZero reports whether d is zero.
func (d Decimal) IsZero() bool { return d.unscaled.Sign() == 0 }

// Sign returns -1, 0 or 1.
func (d Decimal) Sign() int { return d.unscaled.Sign() }

// String renders d exactly, with its own scale ("12.3400" stays so).
func (d Decimal) String() string {
	s := d.unscaled.String()
	if d.scale == 0 {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if pad := int(d.scale) + 1 - len(s); pad > 0 {
		s = strings.Repeat("0", pad) + s
	}
	s = s[:len(s)-int(d.scale)] + "." + s[len(s)-int(d.scale):]
	if neg {
		s = "-" + s
	}
	return s
}

// Scaled returns d's value × 10^scale as an integer, as DECIMAL(p, scale)
// stores it. A value with non-zero digits past scale is an error, never a
// silent rounding.
func (d Decimal) Scaled(scale int) (*big.Int, error) {
	v := new(big.Int).Set(&d.unscaled)
	switch diff := scale - int(d.scale); {
	case diff > 0:
		v.Mul(v, pow10(diff))
	case diff < 0:
		q, r := new(big.Int).QuoRem(v, pow10(-diff), new(big.Int))
		if r.Sign() != 0 {
			return nil, fmt.Errorf("%s has more than %d decimal places", d.String(), scale)
		}
		v = q
	}
	return v, nil
}

// Add returns d + o, exactly.
func (d Decimal) Add(o Decimal) Decimal {
	var r Decimal
	a, b := d, o
	if a.scale < b.scale {
		a, b = b, a
	}
	bv, _ := b.Scaled(int(a.scale))
	r.unscaled.Add(&a.unscaled, bv)
	r.scale = a.scale
	return r
}

// Cmp compares d and o numerically: -1, 0 or 1.
func (d Decimal) Cmp(o Decimal) int {
	s := max(d.scale, o.scale)
	a, _ := d.Scaled(int(s))
	b, _ := o.Scaled(int(s))
	return a.Cmp(b)
}

// Rat returns d as an exact rational.
func (d Decimal) Rat() *big.Rat {
	return new(big.Rat).SetFrac(new(big.Int).Set(&d.unscaled), pow10(int(d.scale)))
}

// Float64 returns the nearest float, for display and price ratios only.
func (d Decimal) Float64() float64 {
	f, _ := d.Rat().Float64()
	return f
}

// NewDecimal builds unscaled × 10^-scale.
func NewDecimal(unscaled *big.Int, scale int) Decimal {
	var d Decimal
	if unscaled != nil {
		d.unscaled.Set(unscaled)
	}
	if scale < 0 {
		d.unscaled.Mul(&d.unscaled, pow10(-scale))
		scale = 0
	}
	d.scale = int32(scale)
	return d
}

var pow10Cache [40]*big.Int

func init() {
	p := big.NewInt(1)
	for i := range pow10Cache {
		pow10Cache[i] = new(big.Int).Set(p)
		p.Mul(p, big.NewInt(10))
	}
}

func pow10(n int) *big.Int {
	if n < len(pow10Cache) {
		return pow10Cache[n]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}
