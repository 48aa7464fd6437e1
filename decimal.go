package tally

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Decimal is an exact decimal number: unscaled × 10^-scale. Costs are money
// and never pass through a float.
//
// The unscaled value is an int64 when it fits, which is every cost the
// interface sends in practice, and a big.Int otherwise; a Decimal is a
// value, and its big.Int is never changed once set, so copies may share it.
type Decimal struct {
	small int64    // the unscaled value, when big is nil
	big   *big.Int // the unscaled value when it does not fit int64; read-only
	scale int32
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

// plainNumber reads -?digits(.digits)?, the form costs and quantities come
// in, without allocating: the sign, the digits as an integer, how many
// digits and how many of them are decimals. It reports false for any other
// text and for more digits than a uint64 surely holds.
func plainNumber(b []byte) (neg bool, m uint64, digits, frac int, ok bool) {
	neg = len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	dot := false
	for i, c := range b {
		switch {
		case '0' <= c && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
		case c == '.' && !dot && i > 0 && i < len(b)-1:
			dot = true
		default:
			return false, 0, 0, 0, false
		}
		if digits > 19 {
			return false, 0, 0, 0, false
		}
	}
	return neg, m, digits, frac, digits > 0
}

// ParsePlainDecimal is the decoders' allocation-free path: it parses a
// plain decimal of at most 18 digits into the
// int64 form; it reports false for any other text, which ParseDecimal then
// judges.
func ParsePlainDecimal(b []byte) (Decimal, bool) {
	neg, m, digits, frac, ok := plainNumber(b)
	if !ok || digits > 18 {
		return Decimal{}, false
	}
	v := int64(m)
	if neg {
		v = -v
	}
	return Decimal{small: v, scale: int32(frac)}, true
}

// pow10f are the powers of ten a float64 holds exactly.
var pow10f = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// ParsePlainFloat parses -?digits(.digits)? of at most 15 significant
// digits. Such a mantissa and power of ten are exact doubles, so one
// division gives the correctly rounded value, as strconv.ParseFloat does.
// It reports false for any other text.
func ParsePlainFloat(b []byte) (float64, bool) {
	neg, m, digits, frac, ok := plainNumber(b)
	if !ok || digits > 15 || frac >= len(pow10f) {
		return 0, false
	}
	x := float64(m) / pow10f[frac]
	if neg {
		x = -x
	}
	return x, true
}

// Unscaled64 returns the unscaled value when it fits an int64, so a
// caller can hash or compare a cost without allocating; ok is false for the
// rare cost beyond it, which String then spells.
func (d Decimal) Unscaled64() (v int64, ok bool) { return d.small, d.big == nil }

func (d *Decimal) parse(s string) error {
	if p, ok := ParsePlainDecimal([]byte(s)); ok {
		*d = p
		return nil
	}
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
	v, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return fmt.Errorf("%q: %w", s, errNotDecimal)
	}
	if neg {
		v.Neg(v)
	}
	scale := int64(len(frac)) - exp
	if scale < 0 {
		v.Mul(v, pow10(int(-scale)))
		scale = 0
	}
	*d = fromBig(v, int32(scale))
	return nil
}

// fromBig makes a Decimal of v, which it keeps (v must not change later),
// as an int64 when it fits.
func fromBig(v *big.Int, scale int32) Decimal {
	if v.IsInt64() {
		return Decimal{small: v.Int64(), scale: scale}
	}
	return Decimal{big: v, scale: scale}
}

// unscaled returns the unscaled value; the caller must not change it.
func (d Decimal) unscaled() *big.Int {
	if d.big != nil {
		return d.big
	}
	return big.NewInt(d.small)
}

// UnmarshalText lets encoding/json and CSV decoding fill a Decimal. On an
// error d is left as it was.
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
func (d Decimal) IsZero() bool { return d.Sign() == 0 }

// Sign returns -1, 0 or 1.
func (d Decimal) Sign() int {
	switch {
	case d.big != nil:
		return d.big.Sign()
	case d.small < 0:
		return -1
	case d.small > 0:
		return 1
	}
	return 0
}

// String renders d exactly, with its own scale ("12.3400" stays so).
func (d Decimal) String() string {
	var s string
	if d.big != nil {
		s = d.big.String()
	} else {
		s = strconv.FormatInt(d.small, 10)
	}
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

// pow10i are the powers of ten an int64 holds.
var pow10i = func() (p [19]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// ScaledInt64 returns d's value × 10^scale when that is a whole number that
// fits an int64, without allocating; ok is false otherwise, and Scaled then
// gives the value or the error.
func (d Decimal) ScaledInt64(scale int) (v int64, ok bool) {
	if d.big != nil {
		return 0, false
	}
	switch diff := scale - int(d.scale); {
	case diff == 0:
		return d.small, true
	case diff > 0:
		if diff >= len(pow10i) {
			return 0, d.small == 0
		}
		p := pow10i[diff]
		if d.small > math.MaxInt64/p || d.small < math.MinInt64/p {
			return 0, false
		}
		return d.small * p, true
	default:
		if -diff >= len(pow10i) {
			return 0, d.small == 0
		}
		p := pow10i[-diff]
		if d.small%p != 0 {
			return 0, false
		}
		return d.small / p, true
	}
}

// Scaled returns d's value × 10^scale as an integer, as DECIMAL(p, scale)
// stores it. A value with non-zero digits past scale is an error, never a
// silent rounding.
func (d Decimal) Scaled(scale int) (*big.Int, error) {
	if v, ok := d.ScaledInt64(scale); ok {
		return big.NewInt(v), nil
	}
	v := new(big.Int).Set(d.unscaled())
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
	a, b := d, o
	if a.scale < b.scale {
		a, b = b, a
	}
	if bv, ok := b.ScaledInt64(int(a.scale)); ok && a.big == nil {
		if s := a.small + bv; (s > a.small) == (bv > 0) {
			return Decimal{small: s, scale: a.scale}
		}
	}
	bv, _ := b.Scaled(int(a.scale))
	return fromBig(bv.Add(bv, a.unscaled()), a.scale)
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
	return new(big.Rat).SetFrac(new(big.Int).Set(d.unscaled()), pow10(int(d.scale)))
}

// Float64 returns the nearest float, for display and price ratios only.
func (d Decimal) Float64() float64 {
	if d.big == nil && d.small > -1<<53 && d.small < 1<<53 && int(d.scale) < len(pow10f) {
		// Both operands are exact doubles: one division rounds correctly.
		return float64(d.small) / pow10f[d.scale]
	}
	f, _ := d.Rat().Float64()
	return f
}

// NewDecimal builds unscaled × 10^-scale.
func NewDecimal(unscaled *big.Int, scale int) Decimal {
	v := new(big.Int)
	if unscaled != nil {
		v.Set(unscaled)
	}
	if scale < 0 {
		v.Mul(v, pow10(-scale))
		scale = 0
	}
	return fromBig(v, int32(scale))
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
