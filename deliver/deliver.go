package deliver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/wneessen/go-mail"
	"github.com/xuri/excelize/v2"

	"github.com/tally-dev/tally/closes"
	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/internal/atomicfile"
	"github.com/tally-dev/tally/internal/retry"
	"github.com/tally-dev/tally/job"
	"github.com/tally-dev/tally/reports"
)

func init() { job.Register("deliver", step) }

// Attempts bounds the tries of one delivery in one run; a delivery that
// fails them all is tried again by the next run. Pause is the wait between
// tries, doubled each time. Tests shorten them (the run-level tests that
// drive this step live with the runner's harness, in schedules).
var (
	Attempts = 3
	Pause    = 2 * time.Second
)

// RootCAs, when set, are the certificates a test's mail server is trusted
// by; nil means the system's, as in production. Certificates are always
// verified.
var RootCAs *x509.CertPool

// XLSXType is the content type a workbook is attached with.
const XLSXType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

// monthWorkbookRE names a month's own workbook; finals come from
// month_closes.
var monthWorkbookRE = regexp.MustCompile(`^tally-cost-(\d{4}-\d{2})\.xlsx$`)

// step sends each finished month's workbook to every target of
// reports.deliver: a month's workbook once, the first run after the month
// ends, and the final workbook of every close in force, once per content
// (a close after a reopen writes a new final, which goes too; the same
// bytes never go twice). Before a mail leaves, the delivery is recorded as
// pending with its Message-ID, so a run killed after the server took the
// mail sends it again with the same Message-ID and mail clients show one
// message; when the workbook was rebuilt meanwhile (a month's workbook is
// rewritten every night), the mail carries a new Message-ID, derived from
// the new bytes, so a receiver that keeps the first copy of a Message-ID
// never holds other bytes than deliveries records under it. A delivery
// that fails its tries leaves the workbook where it is, makes the run
// partial naming it, and is tried again by the next run. A target that
// fails every try of one delivery is down for the rest of the run: the
// workbooks still to go to it are listed as not sent, untried, so one dead
// server costs the run one delivery's tries, not that for every workbook.
func step(ctx context.Context, env *job.Env, runID uuid.UUID) (job.Result, error) {
	var res job.Result
	d := env.Config.Reports.Deliver
	type target struct {
		name string
		mail bool
		send func(ctx context.Context, book deliverable, messageID string) error
	}
	var targets []target
	if d.Dir != "" {
		removeDeliveryTemps(env, d.Dir)
		for _, o := range env.Config.Organizations {
			if o.Name != "" {
				removeDeliveryTemps(env, filepath.Join(d.Dir, o.Name))
			}
		}
		targets = append(targets, target{"dir:" + d.Dir, false, func(ctx context.Context, b deliverable, _ string) error {
			// An organization's own workbook goes to a folder of its
			// name, beside the group's of the same file name.
			dir := d.Dir
			if b.org != "" {
				dir = filepath.Join(d.Dir, b.org)
				if err := os.MkdirAll(dir, 0o750); err != nil {
					return err
				}
			}
			return copyInto(ctx, dir, b.path)
		}})
	}
	if s := d.SMTP; s != nil {
		targets = append(targets, target{"smtp:" + s.Host, true, func(ctx context.Context, b deliverable, id string) error { return mailWorkbook(ctx, env, s, b, id) }})
	}
	if len(targets) == 0 {
		return res, nil
	}
	// A close a kill cut short puts its final in place first, so it goes
	// out tonight rather than wait for the next close.
	if _, err := closes.FinishCloses(ctx, env); err != nil {
		return res, err
	}
	books, err := deliverables(ctx, env)
	if err != nil {
		return res, err
	}
	var failed []error
	down := map[string]error{} // a target that failed every try, and why
	for _, b := range books {
		// The file is hashed only when something is to be sent, so a
		// night's delivery reads no workbook already delivered, however
		// many months the reports folder keeps.
		sum := b.sha256
		verified := false
		verify := func() error {
			if verified {
				return nil
			}
			got, err := atomicfile.SHA256(b.path)
			if err != nil {
				return err
			}
			if b.sha256 != "" && got != b.sha256 {
				return fmt.Errorf("%s differs from the final workbook its close recorded (sha256 %s, recorded %s): not delivered; restore the file as closed", b.path, got, b.sha256)
			}
			sum, verified = got, true
			return nil
		}
		if (b.final() || b.statement()) && sum == "" { // a close recorded before migration 0009
			if err := verify(); err != nil {
				return res, err
			}
		}
		for _, t := range targets {
			if b.statement() && !t.mail {
				continue // a statement goes to its owner, by mail only
			}
			prev, err := recordOf(ctx, env.Store, t.name, b.kind, b.org, b.month, sum)
			if err != nil {
				return res, err
			}
			if prev != nil && prev.Status == StatusSent {
				continue
			}
			if why, ok := down[t.name]; ok {
				env.Log.Error().Str("workbook", b.path).Str("target", t.name).Msg("workbook not delivered: the target failed every try earlier in this run; the next run tries again")
				failed = append(failed, fmt.Errorf("delivery of %s to %s not tried: %s failed every try earlier in this run (the next run tries again): %w", b.path, t.name, t.name, why))
				continue
			}
			if err := verify(); err != nil {
				if b.sha256 == "" {
					return res, err
				}
				env.Log.Error().Str("workbook", b.path).Err(err).Msg("final workbook not delivered")
				failed = append(failed, err)
				break
			}
			rec := Record{Target: t.name, Kind: b.kind, Month: b.month, Path: b.path, SHA256: sum, RunID: runID, Organization: b.org}
			if t.mail {
				rec.MessageID = messageID(env.Config.Reports.Deliver.SMTP.From, b, sum)
				// A resend after a kill of the same bytes is the same
				// message; other bytes (the workbook rebuilt since) are
				// another, whatever the pending row says.
				if prev != nil && prev.MessageID != "" && prev.SHA256 == sum {
					rec.MessageID = prev.MessageID
				}
			}
			if err := recordPending(ctx, env.Store, rec); err != nil {
				return res, err
			}
			env.Log.Info().Str("workbook", b.path).Str("target", t.name).Bool("resend", prev != nil).Msg("delivering workbook")
			err = retryDelivery(ctx, func() error { return t.send(ctx, b, rec.MessageID) })
			if err != nil {
				if ctx.Err() != nil {
					return res, ctx.Err()
				}
				env.Log.Error().Str("workbook", b.path).Str("target", t.name).Err(err).Msg("workbook not delivered; the next run tries again")
				var own *workbookError
				if errors.As(err, &own) {
					failed = append(failed, fmt.Errorf("delivery of %s to %s failed (the next run tries again): %w", b.path, t.name, err))
					continue
				}
				failed = append(failed, fmt.Errorf("delivery of %s to %s failed after %d tries (the next run tries again): %w", b.path, t.name, Attempts, err))
				down[t.name] = err
				continue
			}
			if err := markSent(ctx, env.Store, t.name, sum, runID); err != nil {
				return res, err
			}
			env.Log.Info().Str("workbook", b.path).Str("target", t.name).Msg("workbook delivered")
			res.Outputs = append(res.Outputs, t.name+" "+b.path)
		}
	}
	if len(failed) > 0 {
		return res, job.StepErrors(failed...)
	}
	return res, nil
}

// deliverable is a workbook ready to go.
type deliverable struct {
	path   string
	month  time.Time
	kind   string // KindMonth, KindFinal or KindStatement
	sha256 string // a final's bytes as its close recorded them; "" when unknown
	// A statement's cost centre and owner, its only recipient.
	centre, owner string
	// org is the organization whose own workbook it is (with
	// organizations:); "" for the store's, the group's.
	org string
}

func (d deliverable) final() bool { return d.kind == KindFinal }

func (d deliverable) statement() bool { return d.kind == KindStatement }

// deliverables lists, oldest month first, what may go: the workbook of
// every month that is over (tally-cost-YYYY-MM.xlsx under reports.dir),
// and the final workbook of every close in force for the config's basis
// and granularity, as month_closes records it. A file that merely looks
// like a final is never sent: only a recorded close makes one.
func deliverables(ctx context.Context, env *job.Env) ([]deliverable, error) {
	dir, now := env.Config.Reports.Dir, env.Today()
	matches, err := filepath.Glob(filepath.Join(dir, "*", "tally-cost-*.xlsx"))
	if err != nil {
		return nil, err
	}
	var out []deliverable
	for _, p := range matches {
		m := monthWorkbookRE.FindStringSubmatch(filepath.Base(p))
		if m == nil {
			continue
		}
		month, err := reports.ParseMonth(m[1])
		if err != nil {
			continue
		}
		if !month.AddDate(0, 1, 0).After(now) {
			out = append(out, deliverable{path: p, month: month, kind: KindMonth})
		}
	}
	// Each organization's own workbook (reports.OrgPath), once its month
	// is over, like the group's.
	for _, o := range env.Config.Organizations {
		if o.Name == "" {
			continue
		}
		books, err := filepath.Glob(filepath.Join(dir, "*", o.Name, "tally-cost-*.xlsx"))
		if err != nil {
			return nil, err
		}
		for _, p := range books {
			m := monthWorkbookRE.FindStringSubmatch(filepath.Base(p))
			if m == nil {
				continue
			}
			month, err := reports.ParseMonth(m[1])
			if err != nil || month.AddDate(0, 1, 0).After(now) {
				continue
			}
			out = append(out, deliverable{path: p, month: month, kind: KindMonth, org: o.Name})
		}
	}
	closes, err := env.Store.CurrentCloses(ctx)
	if err != nil {
		return nil, err
	}
	basis, g := env.Config.DefaultBasis(), env.Config.Usage.Granularity
	for _, c := range closes {
		if c.Basis != basis || c.Granularity != g || c.FinalWorkbook == "" {
			continue
		}
		if _, err := os.Stat(c.FinalWorkbook); err != nil {
			env.Log.Error().Str("month", c.Month.Format("2006-01")).Str("final_workbook", c.FinalWorkbook).Msg("the final workbook of a closed month is missing; not delivered")
			continue
		}
		out = append(out, deliverable{path: c.FinalWorkbook, month: c.Month, kind: KindFinal, sha256: c.FinalSHA256, org: c.Organization})
		if env.Config.Reports.Deliver.SMTP == nil {
			continue
		}
		// The close's statements go to their owners once, final like
		// the workbook.
		sts, err := env.Store.CloseStatements(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		for _, st := range sts {
			if st.Owner == "" {
				continue
			}
			if _, err := os.Stat(st.Path); err != nil {
				env.Log.Error().Str("month", c.Month.Format("2006-01")).Str("statement", st.Path).Msg("the final statement of a closed month is missing; not delivered")
				continue
			}
			out = append(out, deliverable{path: st.Path, month: c.Month, kind: KindStatement, sha256: st.SHA256, centre: st.CostCentre, owner: st.Owner, org: c.Organization})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].month.Equal(out[j].month) {
			return out[i].month.Before(out[j].month)
		}
		return deliverOrder(out[i].kind) < deliverOrder(out[j].kind)
	})
	return out, nil
}

// deliverOrder sends a month's workbook, then its final, then the final's
// statements.
func deliverOrder(kind string) int {
	return map[string]int{KindMonth: 0, KindFinal: 1, KindStatement: 2}[kind]
}

// messageID is a mail's Message-ID, derived from what it carries, so every
// send of the same workbook to the same sender's domain has the same id.
func messageID(from string, b deliverable, sha string) string {
	domain := "tally.invalid"
	if _, d, ok := strings.Cut(from, "@"); ok && d != "" {
		domain = strings.Trim(d, "<> ")
	}
	return fmt.Sprintf("<tally-%s-%s-%s@%s>", b.month.Format("2006-01"), b.kind, sha[:32], domain)
}

// retryDelivery tries send Attempts times, except after a
// workbookError, which another try would only repeat.
func retryDelivery(ctx context.Context, send func() error) error {
	return retry.Do(ctx, Attempts, Pause, func() (bool, error) {
		err := send()
		var own *workbookError
		return !errors.As(err, &own), err
	})
}

// workbookError is a delivery's failure that lies with the workbook, not
// the target (its Summary unreadable, its owner's address invalid): the
// target is not down for the other workbooks of the run.
type workbookError struct{ err error }

func (e *workbookError) Error() string { return e.err.Error() }
func (e *workbookError) Unwrap() error { return e.err }

// removeDeliveryTemps removes the temporary files a killed delivery left in
// the shared folder (copyInto writes through one): they hold a whole
// month's cost data and would otherwise stay there, hidden, for good. The
// writer lock is held, so no delivery of this Tally is writing them.
func removeDeliveryTemps(env *job.Env, dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if deliveryTempRE.MatchString(e.Name()) {
			p := filepath.Join(dir, e.Name())
			if err := os.Remove(p); err == nil {
				env.Log.Warn().Str("file", p).Msg("removed the temporary file of a delivery a kill cut short")
			}
		}
	}
}

// deliveryTempRE matches atomicfile's temporary files of a workbook.
var deliveryTempRE = regexp.MustCompile(`^\.tally-cost-\d{4}-\d{2}(?:-final(?:-\d+)?)?\.xlsx\.[^/]*\.tmp$`)

// copyInto copies the workbook into dir whole: a temporary file there,
// synced, then renamed, so a reader of the shared folder never sees half
// of one. Mode 0640, as Tally's own workbooks.
func copyInto(ctx context.Context, dir, path string) error {
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	return atomicfile.Write(ctx, filepath.Join(dir, filepath.Base(path)), 0o640, func(w io.Writer) error {
		_, err := io.Copy(w, src)
		return err
	})
}

// mailWorkbook sends the workbook as an attachment, with the figures of
// its own Summary in the text, through s. The password is read now, from
// its variable or file, and goes nowhere but the server's AUTH. Every wait
// is bounded: the whole send by s.Timeout, and by ctx, which closes the
// connection when the run is cancelled.
func mailWorkbook(ctx context.Context, env *job.Env, s *configs.SMTPConfig, b deliverable, messageID string) error {
	password, err := s.Password(os.Getenv)
	if err != nil {
		return err
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = configs.DefaultSMTPTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tlsConf := &tls.Config{ServerName: s.Host, MinVersion: tls.VersionTLS12}
	if RootCAs != nil {
		tlsConf.RootCAs = RootCAs
	}
	opts := []mail.Option{mail.WithPort(s.Port), mail.WithTimeout(timeout), mail.WithTLSConfig(tlsConf),
		mail.WithDialContextFunc(boundedDial(ctx, s.Security == "tls", tlsConf))}
	if s.Security == "tls" {
		opts = append(opts, mail.WithSSL())
	} else {
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	}
	if s.Username != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthPlain), mail.WithUsername(s.Username), mail.WithPassword(password.Reveal()))
	}
	client, err := mail.NewClient(s.Host, opts...)
	if err != nil {
		return fmt.Errorf("mail client for %s: %w", s.Host, err)
	}
	body, err := mailBody(b)
	if b.statement() {
		body, err = statementBody(b)
	}
	if err != nil {
		return &workbookError{err}
	}
	m := mail.NewMsg()
	if err := m.From(s.From); err != nil {
		return fmt.Errorf("reports.deliver.smtp.from %q: %w", s.From, err)
	}
	month := b.month.Format("2006-01")
	subject := strings.ReplaceAll(s.Subject, "{month}", month)
	if b.statement() {
		if err := m.To(b.owner); err != nil {
			return &workbookError{fmt.Errorf("allocation.cost_centres owner %q of %s: %w", b.owner, b.centre, err)}
		}
		subject = fmt.Sprintf("Tally chargeback statement %s %s (final)", b.centre, month)
	} else if err := m.To(s.To...); err != nil {
		return fmt.Errorf("reports.deliver.smtp.to %q: %w", s.To, err)
	}
	if b.final() {
		subject += " (final)"
	}
	m.Subject(subject)
	m.SetMessageIDWithValue(strings.Trim(messageID, "<>"))
	m.SetBodyString(mail.TypeTextPlain, body)
	m.AttachFile(b.path, mail.WithFileContentType(XLSXType))
	if err := client.DialAndSendWithContext(ctx, m); err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("send through %s:%d: no answer within reports.deliver.smtp.timeout %s: %w", s.Host, s.Port, timeout, err)
		}
		return fmt.Errorf("send through %s:%d: %w", s.Host, s.Port, err)
	}
	return nil
}

// boundedDial dials the mail server with a connection whose every read and
// write ends by ctx's deadline (go-mail sets per-command deadlines of its
// own, which only ever move it later, and none while reading the
// greeting), and which is closed the moment ctx is done, so SIGTERM ends a
// send at once. With implicit TLS it does the handshake itself, under the
// same bounds.
func boundedDial(ctx context.Context, implicitTLS bool, tlsConf *tls.Config) mail.DialContextFunc {
	return func(dialCtx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		raw, err := d.DialContext(dialCtx, network, addr)
		if err != nil {
			return nil, err
		}
		limit, _ := ctx.Deadline()
		conn := &boundedConn{Conn: raw, limit: limit}
		_ = conn.SetDeadline(time.Time{})
		context.AfterFunc(ctx, func() { raw.Close() })
		if !implicitTLS {
			return conn, nil
		}
		tc := tls.Client(conn, tlsConf)
		if err := tc.HandshakeContext(dialCtx); err != nil {
			raw.Close()
			return nil, err
		}
		return tc, nil
	}
}

// boundedConn never lets a deadline be set past limit, nor cleared.
type boundedConn struct {
	net.Conn
	limit time.Time
}

func (c *boundedConn) clamp(t time.Time) time.Time {
	if !c.limit.IsZero() && (t.IsZero() || t.After(c.limit)) {
		return c.limit
	}
	return t
}

func (c *boundedConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.clamp(t)) }
func (c *boundedConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.clamp(t)) }
func (c *boundedConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.clamp(t)) }

// mailBody is the mail's short text: which workbook is attached, and the
// figures of that very file's Summary (its month status and usage value
// per currency), read back from it as a spreadsheet shows them, so the
// mail can never say something the attachment does not.
func mailBody(b deliverable) (string, error) {
	sum, err := reports.ReadSummary(b.path)
	if err != nil {
		return "", fmt.Errorf("read the Summary of %s for the mail: %w", b.path, err)
	}
	var sb strings.Builder
	kind := "workbook"
	if b.final() {
		kind = "final workbook (the month is closed; this file never changes)"
	}
	if b.org != "" {
		kind += " of organization " + b.org
	}
	fmt.Fprintf(&sb, "Tally cost %s for %s, attached: %s\n\n", kind, b.month.Format("January 2006"), filepath.Base(b.path))
	if sum.Status != "" {
		fmt.Fprintf(&sb, "Month status: %s\n\n", sum.Status)
	}
	sb.WriteString(sum.Text())
	return sb.String(), nil
}

// statementBody is a statement mail's short text: which statement is
// attached and its totals, read back from that very file.
func statementBody(b deliverable) (string, error) {
	f, err := excelize.OpenFile(b.path)
	if err != nil {
		return "", fmt.Errorf("read the statement %s for the mail: %w", b.path, err)
	}
	defer f.Close()
	rows, err := f.GetRows("Statement")
	if err != nil {
		return "", fmt.Errorf("read the statement %s for the mail: %w", b.path, err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Tally chargeback statement of %s for %s (final: the month is closed; this file never changes), attached: %s\n\n",
		b.centre, b.month.Format("January 2006"), filepath.Base(b.path))
	for _, r := range rows {
		if len(r) >= 7 && r[0] == "Total" {
			fmt.Fprintf(&sb, "Total %s: %s\n", r[2], r[6])
		}
	}
	return sb.String(), nil
}
