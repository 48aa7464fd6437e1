package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/xuri/excelize/v2"
)

// runFloor writes the cells of Tally's Detail sheet for the rows of -dir
// with excelize's StreamWriter and nothing else: no query, no other sheet,
// no table. It is the least any workbook holding those cells costs, the
// floor Tally's report is measured against.
func runFloor(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("floor", flag.ExitOnError)
	dir := fs.String("dir", "", "folder of page files written by gen (for its manifest)")
	out := fs.String("out", "", "workbook to write")
	fs.Parse(args)
	if *dir == "" || *out == "" {
		return errors.New("floor: -dir and -out are required")
	}
	m, err := readManifest(*dir)
	if err != nil {
		return fmt.Errorf("floor: read manifest: %w", err)
	}
	month, _ := time.Parse("2006-01", m.Month)
	var payers []payer
	for _, p := range m.Payers {
		payers = append(payers, payer{p.ID, p.Name, p.Currency})
	}
	ds, err := newDataset(month, m.Rows, payers, m.Projects, m.Meters)
	if err != nil {
		return err
	}
	began := time.Now()
	f := excelize.NewFile()
	defer f.Close()
	style := func(format string) int {
		id, err2 := f.NewStyle(&excelize.Style{CustomNumFmt: &format, Alignment: &excelize.Alignment{Vertical: "top"}})
		if err == nil {
			err = err2
		}
		return id
	}
	text, _ := f.NewStyle(&excelize.Style{Alignment: &excelize.Alignment{Vertical: "top"}})
	header, _ := f.NewStyle(&excelize.Style{Font: &excelize.Font{Bold: true}})
	hour, stamp, qty := style("yyyy-mm-dd hh:mm"), style("yyyy-mm-dd hh:mm:ss"), style("#,##0.00####")
	money := map[string]int{"USD": style(`#,##0.00 "USD"`), "EUR": style(`#,##0.00 "EUR"`)}
	price := map[string]int{"USD": style(`#,##0.00#### "USD"`), "EUR": style(`#,##0.00#### "EUR"`)}
	if err != nil {
		return err
	}
	if err := f.SetSheetName("Sheet1", "Detail"); err != nil {
		return err
	}
	sw, err := f.NewStreamWriter("Detail")
	if err != nil {
		return err
	}
	headers := []string{"Date", "Date processed", "Project", "Family", "Solution", "Meter", "Meter SKU",
		"Quantity", "Unit", "Unit price (as sent)", "Usage value", "Currency", "Entitlement type", "Paid as",
		"Entitlement id", "Payment method id", "Payment method name", "Run id", "Fetched at (UTC)"}
	for i := range headers {
		if err := sw.SetColWidth(i+1, i+1, 18); err != nil {
			return err
		}
	}
	cells := make([]excelize.Cell, len(headers))
	vals := make([]any, len(headers))
	for i, h := range headers {
		cells[i] = excelize.Cell{StyleID: header, Value: h}
		vals[i] = &cells[i]
	}
	if err := sw.SetRow("A1", vals); err != nil {
		return err
	}
	runID := "019a9c3e-7b1d-7c4e-9f0a-3b2c1d0e9f8a"
	fetched := time.Date(2026, 2, 1, 2, 30, 0, 0, time.UTC)
	paidAs := map[string]string{"": "Billed directly", "license": "Covered by a license", "cash": "Drawn from a balance", "preCommitment": "Drawn from a balance"}
	var r row
	opt := func(c *excelize.Cell, s string) any {
		if s == "" {
			return nil
		}
		c.Value = s
		return c
	}
	set := func(k, style int, v any) {
		cells[k] = excelize.Cell{StyleID: style, Value: v}
		vals[k] = &cells[k]
	}
	for i := 0; i < ds.rows; i++ {
		if i%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		ds.at(i, &r)
		set(0, hour, r.date)
		set(1, hour, r.processed)
		if r.processed.IsZero() {
			vals[1] = nil
		}
		set(2, text, r.project)
		set(3, text, r.meter.family)
		set(4, text, r.meter.solution)
		set(5, text, r.meter.name)
		cells[6].StyleID = text
		vals[6] = opt(&cells[6], r.meter.sku)
		set(7, qty, float64(r.q4)/1e4)
		cells[8].StyleID = text
		vals[8] = opt(&cells[8], r.meter.unit)
		set(9, price[r.payer.currency], float64(r.price6)/1e6)
		set(10, money[r.payer.currency], float64(r.cost10)/1e10)
		set(11, text, r.payer.currency)
		cells[12].StyleID = text
		vals[12] = opt(&cells[12], r.entType)
		set(13, text, paidAs[r.entType])
		cells[14].StyleID = text
		vals[14] = opt(&cells[14], r.entID)
		set(15, text, r.payer.id)
		set(16, text, r.payer.name)
		set(17, text, runID)
		set(18, stamp, fetched)
		ref, err := excelize.CoordinatesToCellName(1, i+2)
		if err != nil {
			return err
		}
		if err := sw.SetRow(ref, vals); err != nil {
			return err
		}
	}
	if err := sw.Flush(); err != nil {
		return err
	}
	if err := f.SaveAs(*out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "floor: %d rows in %s\n", ds.rows, time.Since(began).Round(time.Millisecond))
	return nil
}
