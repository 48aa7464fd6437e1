package reports

import (
	"fmt"
	"strings"

	"github.com/xuri/excelize/v2"
)

// printSetup gives a sheet the page setup a controller prints it with, or
// saves it as PDF for the month's binder: landscape, one page wide (as many
// pages tall as it takes), the header row repeated on every page when the
// sheet's table starts at row 1 (every sheet but the Summary), and a footer
// naming the month, the sheet, the page of how many, and when the workbook
// was generated. Streamed sheets (Detail) take it before their stream
// starts: excelize writes a streamed sheet's page setup when it flushes.
func (b *builder) printSetup(sheet string, headerRow bool) error {
	landscape, wide, tall := "landscape", 1, 0
	if err := b.f.SetPageLayout(sheet, &excelize.PageLayoutOptions{
		Orientation: &landscape,
		FitToWidth:  &wide,
		FitToHeight: &tall, // 0: as many pages tall as the rows need
	}); err != nil {
		return fmt.Errorf("page layout of %s: %w", sheet, err)
	}
	fit := true
	if err := b.f.SetSheetProps(sheet, &excelize.SheetPropsOptions{FitToPage: &fit}); err != nil {
		return fmt.Errorf("fit %s to the page: %w", sheet, err)
	}
	footer := "&L" + footerText(b.p.Month.Format(monthLayout)+" · basis "+string(b.p.Basis)) +
		"&C&A&R" + "Page &P of &N · generated " + footerText(b.now.Format("2006-01-02 15:04 UTC"))
	if err := b.f.SetHeaderFooter(sheet, &excelize.HeaderFooterOptions{OddFooter: footer}); err != nil {
		return fmt.Errorf("footer of %s: %w", sheet, err)
	}
	if headerRow {
		if err := b.f.SetDefinedName(&excelize.DefinedName{
			Name:     "_xlnm.Print_Titles",
			RefersTo: "'" + strings.ReplaceAll(sheet, "'", "''") + "'!$1:$1",
			Scope:    sheet,
		}); err != nil {
			return fmt.Errorf("print titles of %s: %w", sheet, err)
		}
	}
	return nil
}

// footerText escapes & in text for a header or footer, where it starts a
// code (&P, &A, …).
func footerText(s string) string { return strings.ReplaceAll(s, "&", "&&") }
