package schedules

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/wneessen/go-mail"

	"github.com/tally-dev/tally/configs"
	"github.com/tally-dev/tally/internal/atomicfile"
	"github.com/tally-dev/tally/internal/retry"
	"github.com/tally-dev/tally/reports"
)

func init() { RegisterStep("deliver", deliverStep) }

// deliverAttempts bounds the tries of one delivery in one run; a delivery
// that fails them all is tried again by the next run. deliverPause is the
// wait between tries, doubled each time; tests shorten it.
var (
	deliverAttempts = 3
	deliverPause    = 2 * time.Second
)

// deliverRootCAs, when set, are the certificates a test's mail server is
// trusted by; nil means the system's, as in production. Certificates are
// always verified.
var deliverRootCAs *x509.CertPool

const xlsxType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

// workbookRE names the workbooks a delivery may send: a month's workbook,
// and the final one a close writes.
var workbookRE = regexp.MustCompile(`^tally-cost-(\d{4}-\d{2})(-final)?\.xlsx$`)

// deliverStep sends each finished month's workbook to every target of
// reports.deliver, once: the workbook of a month that is over (the first
// run after its end delivers it), and the final workbook of a closed month
// when the close writes it. A delivery is recorded (deliveries) and never
// repeated; one that fails its tries leaves the workbook where it is, makes
// the run partial naming it, and is tried again by the next run.
func deliverStep(ctx context.Context, env *Env, runID uuid.UUID) (StepResult, error) {
	var res StepResult
	d := env.Config.Reports.Deliver
	type target struct {
		name string
		send func(ctx context.Context, book deliverable) error
	}
	var targets []target
	if d.Dir != "" {
		targets = append(targets, target{"dir:" + d.Dir, func(ctx context.Context, b deliverable) error { return copyInto(ctx, d.Dir, b.path) }})
	}
	if s := d.SMTP; s != nil {
		targets = append(targets, target{"smtp:" + s.Host, func(ctx context.Context, b deliverable) error { return mailWorkbook(ctx, env, s, b) }})
	}
	if len(targets) == 0 {
		return res, nil
	}
	books, err := deliverables(env.Config.Reports.Dir, env.now())
	if err != nil {
		return res, err
	}
	var failed []error
	for _, b := range books {
		for _, t := range targets {
			done, err := env.Store.Delivered(ctx, t.name, b.path)
			if err != nil {
				return res, err
			}
			if done {
				continue
			}
			sum, err := fileSHA256(b.path)
			if err != nil {
				return res, err
			}
			env.Log.Info().Str("workbook", b.path).Str("target", t.name).Msg("delivering workbook")
			err = retryDelivery(ctx, func() error { return t.send(ctx, b) })
			if err != nil {
				if ctx.Err() != nil {
					return res, ctx.Err()
				}
				env.Log.Error().Str("workbook", b.path).Str("target", t.name).Err(err).Msg("workbook not delivered; the next run tries again")
				failed = append(failed, fmt.Errorf("delivery of %s to %s failed after %d tries (the next run tries again): %w", b.path, t.name, deliverAttempts, err))
				continue
			}
			if err := env.Store.RecordDelivery(ctx, t.name, b.path, sum, runID); err != nil {
				return res, err
			}
			env.Log.Info().Str("workbook", b.path).Str("target", t.name).Msg("workbook delivered")
			res.Outputs = append(res.Outputs, t.name+" "+b.path)
		}
	}
	if len(failed) > 0 {
		return res, &PartialError{Other: failed}
	}
	return res, nil
}

// deliverable is a workbook ready to go.
type deliverable struct {
	path  string
	month time.Time
	final bool
}

// deliverables lists, oldest first, the workbooks under dir whose month is
// over at now: a month's own workbook once it has ended, and every final
// workbook.
func deliverables(dir string, now time.Time) ([]deliverable, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*", "tally-cost-*.xlsx"))
	if err != nil {
		return nil, err
	}
	var out []deliverable
	for _, p := range matches {
		m := workbookRE.FindStringSubmatch(filepath.Base(p))
		if m == nil {
			continue
		}
		month, err := reports.ParseMonth(m[1])
		if err != nil {
			continue
		}
		if !month.AddDate(0, 1, 0).After(now) || m[2] != "" {
			out = append(out, deliverable{path: p, month: month, final: m[2] != ""})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

func retryDelivery(ctx context.Context, send func() error) error {
	return retry.Do(ctx, deliverAttempts, deliverPause, func() (bool, error) { return true, send() })
}

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

// mailWorkbook sends the workbook as an attachment with the month's totals
// per currency in the text, through s. The password is read now, from its
// variable or file, and goes nowhere but the server's AUTH.
func mailWorkbook(ctx context.Context, env *Env, s *configs.SMTPConfig, b deliverable) error {
	password, err := s.Password(os.Getenv)
	if err != nil {
		return err
	}
	opts := []mail.Option{mail.WithPort(s.Port), mail.WithTimeout(30 * time.Second)}
	tlsConf := &tls.Config{ServerName: s.Host, MinVersion: tls.VersionTLS12}
	if deliverRootCAs != nil {
		tlsConf.RootCAs = deliverRootCAs
	}
	opts = append(opts, mail.WithTLSConfig(tlsConf))
	if s.Security == "tls" {
		opts = append(opts, mail.WithSSL())
	} else {
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	}
	if s.Username != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthPlain), mail.WithUsername(s.Username), mail.WithPassword(password))
	}
	client, err := mail.NewClient(s.Host, opts...)
	if err != nil {
		return fmt.Errorf("mail client for %s: %w", s.Host, err)
	}
	m := mail.NewMsg()
	if err := m.From(s.From); err != nil {
		return fmt.Errorf("reports.deliver.smtp.from %q: %w", s.From, err)
	}
	if err := m.To(s.To...); err != nil {
		return fmt.Errorf("reports.deliver.smtp.to %q: %w", s.To, err)
	}
	month := b.month.Format("2006-01")
	subject := strings.ReplaceAll(s.Subject, "{month}", month)
	if b.final {
		subject += " (final)"
	}
	m.Subject(subject)
	m.SetBodyString(mail.TypeTextPlain, mailBody(ctx, env, b))
	m.AttachFile(b.path, mail.WithFileContentType(xlsxType))
	if err := client.DialAndSendWithContext(ctx, m); err != nil {
		return fmt.Errorf("send through %s:%d: %w", s.Host, s.Port, err)
	}
	return nil
}

// mailBody is the mail's short text: the month, and its usage value and
// invoiced part per currency as the workbook's Summary has them.
func mailBody(ctx context.Context, env *Env, b deliverable) string {
	var sb strings.Builder
	kind := "workbook"
	if b.final {
		kind = "final workbook (the month is closed; this file never changes)"
	}
	fmt.Fprintf(&sb, "Tally cost %s for %s, attached: %s\n\n", kind, b.month.Format("January 2006"), filepath.Base(b.path))
	cfg := env.Config
	p := reports.Period{Month: b.month, Basis: cfg.DefaultBasis(), Granularity: cfg.Usage.Granularity}
	totals, err := reports.MonthTotals(ctx, env.Store.DB(), p)
	if err != nil || len(totals) == 0 {
		sb.WriteString("Totals: see the workbook's Summary.\n")
		return sb.String()
	}
	sb.WriteString("Usage value and invoiced amount per currency (never added across currencies):\n")
	for _, t := range totals {
		fmt.Fprintf(&sb, "  %s  usage value %s, invoiced %s\n", t.Currency, t.UsageValue, t.Invoiced)
	}
	return sb.String()
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
