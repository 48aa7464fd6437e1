package reports

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"time"
)

// CloseStamp is a month's close as its workbooks state it: when, by whom,
// why, the fingerprint, and which final workbook is current.
type CloseStamp struct {
	At            time.Time
	Who, Reason   string
	Rows          int64  // fingerprint: usage rows at close
	ContentHash   string // fingerprint: sha256 over the rows (month_closes.content_hash)
	Seq           int    // 1 for the month's first close, 2 after a reopen and a new close…
	FinalWorkbook string // the final workbook's path or name
}

// monthState is what the store says of the report month's closes.
type monthState struct {
	close    *CloseStamp // the close in force; nil when never closed or reopened since
	reopened *CloseStamp // the reopen in force (At, Who, Reason), when the latest action is a reopen
	final    bool        // this workbook is the final one the close writes
	// reopenedSince names, in a group's workbook, the organizations
	// reopened on their own since the group's close.
	reopenedSince string
	id            string // the close or reopen in force (month_closes.id); "" for a workbook the close writes
}

// readMonthState reads the month's latest close or reopen. A workbook the
// close itself writes gets its stamp from the options: the close is not
// recorded until the file is written.
func (b *builder) readMonthState() error {
	if b.opts.Close != nil {
		c := *b.opts.Close
		b.state = monthState{close: &c, final: true}
		return nil
	}
	return b.each("month_close", func(r *sql.Rows) error {
		var action, who string
		var at time.Time
		var reason, hash, final sql.NullString
		var rows sql.NullInt64
		var closes int
		var since sql.NullString
		var id string
		if err := r.Scan(&action, &at, &who, &reason, &rows, &hash, &id, &final, &closes, &since); err != nil {
			return err
		}
		b.state.reopenedSince = since.String
		b.state.id = id
		st := &CloseStamp{At: at.UTC(), Who: who, Reason: reason.String, Rows: rows.Int64, ContentHash: hash.String, Seq: closes, FinalWorkbook: final.String}
		if action == "close" {
			b.state.close = st
		} else {
			b.state.reopened = st
		}
		return nil
	})
}

// monthStatus is the Summary's "Month status": whether the month is under
// way, over, closed or reopened, in words that are true for this workbook.
func (b *builder) monthStatus() string {
	st := b.state
	switch {
	case st.close != nil && st.final:
		return fmt.Sprintf("Closed %s UTC by %s: this is the month's final workbook (%s) and never changes", st.close.At.Format("2006-01-02 15:04"), st.close.Who, filepath.Base(st.close.FinalWorkbook))
	case st.close != nil && st.reopenedSince != "":
		return fmt.Sprintf("Closed %s UTC by %s; the final workbook is %s. Reopened since for organization %s, whose figures may still change. This workbook is written from today's data", st.close.At.Format("2006-01-02 15:04"), st.close.Who, filepath.Base(st.close.FinalWorkbook), st.reopenedSince)
	case st.close != nil:
		return fmt.Sprintf("Closed %s UTC by %s; the final workbook is %s. This workbook is written from today's data: late charges since the close show as adjustments", st.close.At.Format("2006-01-02 15:04"), st.close.Who, filepath.Base(st.close.FinalWorkbook))
	case st.reopened != nil && b.closed:
		return fmt.Sprintf("Over, reopened %s UTC by %s (%s): not closed, figures may still change", st.reopened.At.Format("2006-01-02 15:04"), st.reopened.Who, st.reopened.Reason)
	case b.closed:
		return "Over, not closed: late charges may still change these figures; tally close makes them final"
	}
	return "Month to date: the month is not over, figures will still grow"
}

// closeLines are the Summary's close stamp, for a closed month.
func (b *builder) closeLines() [][]cell {
	c := b.state.close
	if c == nil {
		return nil
	}
	reason := c.Reason
	if reason == "" {
		reason = "(none given)"
	}
	final := filepath.Base(c.FinalWorkbook)
	if c.Seq > 1 {
		final += fmt.Sprintf(" (close %d of the month: the month was reopened and closed again; earlier finals are superseded)", c.Seq)
	}
	return [][]cell{
		{b.label("Closed at (UTC)"), {c.At, b.st.dateTime}},
		{b.label("Closed by"), b.txt(c.Who)},
		{b.label("Close reason"), b.txt(reason)},
		{b.label("Close fingerprint: rows"), b.count(c.Rows)},
		{b.label("Close fingerprint: content hash"), b.txt(c.ContentHash)},
		{b.label("Final workbook (current)"), b.txt(final)},
	}
}
