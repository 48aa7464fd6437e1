package reports

import (
	"fmt"
	"strings"

	"github.com/xuri/excelize/v2"
)

// The Summary's labels that ReadSummary finds its figures by.
const (
	monthStatusLabel = "Month status"
	totalsSection    = "Usage value per currency (never added across currencies)"
)

// SummaryFigures is what a workbook's Summary says of its month, as a
// spreadsheet shows it: the month status, and the usage value per currency
// table (header and one row a currency) with every amount rounded and
// labelled as the cell displays it.
type SummaryFigures struct {
	Status string
	Header []string
	Rows   [][]string
}

// ReadSummary reads the figures of the workbook at path back from its
// Summary sheet, so whatever quotes them (the delivery mail) quotes that
// file and nothing computed beside it.
func ReadSummary(path string) (SummaryFigures, error) {
	var out SummaryFigures
	f, err := excelize.OpenFile(path)
	if err != nil {
		return out, err
	}
	defer f.Close()
	rows, err := f.GetRows(sheetSummary)
	if err != nil {
		return out, err
	}
	for i := 0; i < len(rows); i++ {
		r := rows[i]
		if len(r) == 0 {
			continue
		}
		switch r[0] {
		case monthStatusLabel:
			if len(r) > 1 {
				out.Status = r[1]
			}
		case totalsSection:
			if i+1 >= len(rows) {
				return out, fmt.Errorf("sheet %s: no table under %q", sheetSummary, totalsSection)
			}
			out.Header = rows[i+1]
			for j := i + 2; j < len(rows) && len(rows[j]) > 0 && rows[j][0] != ""; j++ {
				out.Rows = append(out.Rows, rows[j])
			}
			return out, nil
		}
	}
	return out, fmt.Errorf("sheet %s has no %q table", sheetSummary, totalsSection)
}

// Text is the figures as plain text: one line a currency, each amount
// beside its column's name, as the Summary labels it.
func (s SummaryFigures) Text() string {
	var sb strings.Builder
	sb.WriteString(totalsSection + ", as the attached workbook's Summary shows it:\n")
	if len(s.Rows) == 1 && len(s.Rows[0]) == 1 {
		fmt.Fprintf(&sb, "  %s\n", s.Rows[0][0])
		return sb.String()
	}
	for _, r := range s.Rows {
		var parts []string
		for i := 1; i < len(r) && i < len(s.Header); i++ {
			parts = append(parts, s.Header[i]+": "+r[i])
		}
		fmt.Fprintf(&sb, "  %s  %s\n", r[0], strings.Join(parts, "; "))
	}
	return sb.String()
}
