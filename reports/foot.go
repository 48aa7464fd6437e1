package reports

import (
	"math/big"
	"strings"
)

// Figures that foot: where a total is shown beside its parts (a row's
// billed, balance, license and other amounts and their total), the parts
// as shown add up to the total as shown. Cells keep their exact values;
// a row whose parts rounded to the cent would not add up to its total
// rounded to the cent is shown with as many more decimals as it takes
// (the Notes say so).

// maxFootDecimals bounds the decimals shown: the store keeps twelve.
const maxFootDecimals = 12

// footDecimals is the fewest decimals, two or more, at which parts rounded
// add up to total rounded; NULL parts count as blank.
func footDecimals(parts []money, total money) int {
	if !total.valid {
		return 2
	}
	for d := 2; d < maxFootDecimals; d++ {
		sum := new(big.Int)
		for _, p := range parts {
			if p.valid {
				sum.Add(sum, roundedUnits(p.dec.Rat(), d))
			}
		}
		if sum.Cmp(roundedUnits(total.dec.Rat(), d)) == 0 {
			return d
		}
	}
	return maxFootDecimals
}

// roundedUnits is r in units of 10^-d, rounded half away from zero, as a
// spreadsheet rounds what it shows.
func roundedUnits(r *big.Rat, d int) *big.Int {
	x := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d)), nil)))
	q, rem := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int))
	if new(big.Int).Mul(new(big.Int).Abs(rem), big.NewInt(2)).Cmp(x.Denom()) >= 0 {
		if x.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// moneyFormat is an amount's number format with decimals decimals.
func moneyFormat(decimals int) string {
	return "#,##0." + strings.Repeat("0", decimals)
}
