package prooftest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// MailServer is a real SMTP server in-process (go-smtp) with STARTTLS on
// a self-signed certificate and AUTH PLAIN, keeping what it received. Its
// behaviour can be made hostile: refuse DATA, stall after AUTH, or keep a
// message and never answer.
type MailServer struct {
	Addr    string
	Pool    *x509.CertPool // trusts the server's certificate
	CertPEM string         // a PEM file of that certificate (SSL_CERT_FILE for a tally process)

	mu       sync.Mutex
	refuse   bool
	stall    time.Duration
	hold     bool
	messages [][]byte
	auths    []string
	release  chan struct{}
	kept     chan struct{} // a token for each message kept, for Kept
}

// NewMailServer starts a MailServer on loopback for the test's length.
func NewMailServer(t testing.TB) *MailServer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ms := &MailServer{Pool: x509.NewCertPool(), release: make(chan struct{}), kept: make(chan struct{}, 1)}
	ms.Pool.AddCert(cert)
	ms.CertPEM = filepath.Join(t.TempDir(), "mail-ca.pem")
	if err := os.WriteFile(ms.CertPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &mailSession{ms: ms}, nil }))
	srv.Domain = "127.0.0.1"
	srv.ErrorLog = log.New(io.Discard, "", 0) // a killed client's reset is the point of some tests
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ms.Addr = ln.Addr().String()
	go srv.Serve(ln)
	t.Cleanup(func() {
		close(ms.release)
		srv.Close()
	})
	return ms
}

// Port is the server's port.
func (ms *MailServer) Port() int {
	_, p, _ := net.SplitHostPort(ms.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

// Refuse makes DATA answer 550 (mailbox unavailable), or stop doing so.
func (ms *MailServer) Refuse(on bool) { ms.mu.Lock(); ms.refuse = on; ms.mu.Unlock() }

// Stall makes the server wait d after a successful AUTH before it answers
// MAIL FROM.
func (ms *MailServer) Stall(d time.Duration) { ms.mu.Lock(); ms.stall = d; ms.mu.Unlock() }

// Hold makes the server keep each message and then never answer DATA, as
// a server that took a mail while its client died; off answers again.
func (ms *MailServer) Hold(on bool) { ms.mu.Lock(); ms.hold = on; ms.mu.Unlock() }

// Received returns the messages kept so far, as received.
func (ms *MailServer) Received() [][]byte {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return append([][]byte(nil), ms.messages...)
}

// Kept is signalled when the server has kept a message, before it answers
// DATA: the moment a client's kill leaves a mail sent but not known sent.
func (ms *MailServer) Kept() <-chan struct{} { return ms.kept }

// Auths returns user:password of each successful AUTH.
func (ms *MailServer) Auths() []string {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return append([]string(nil), ms.auths...)
}

type mailSession struct {
	ms   *MailServer
	auth bool
}

func (s *mailSession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *mailSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		s.ms.mu.Lock()
		defer s.ms.mu.Unlock()
		s.ms.auths = append(s.ms.auths, user+":"+pass)
		s.auth = true
		return nil
	}), nil
}
func (s *mailSession) Mail(string, *smtp.MailOptions) error {
	if !s.auth {
		return smtp.ErrAuthRequired
	}
	s.ms.mu.Lock()
	stall := s.ms.stall
	s.ms.mu.Unlock()
	if stall > 0 {
		select {
		case <-time.After(stall):
		case <-s.ms.release:
		}
	}
	return nil
}
func (s *mailSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *mailSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.ms.mu.Lock()
	if s.ms.refuse {
		s.ms.mu.Unlock()
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "mailbox unavailable"}
	}
	s.ms.messages = append(s.ms.messages, b)
	hold := s.ms.hold
	s.ms.mu.Unlock()
	select {
	case s.ms.kept <- struct{}{}:
	default:
	}
	if hold {
		<-s.ms.release
	}
	return nil
}
func (s *mailSession) Reset()        {}
func (s *mailSession) Logout() error { return nil }

// Mail is a received message taken apart: its headers, its text parts,
// and its attachment with the name and type it was sent under.
type Mail struct {
	Header     mail.Header
	Text       string
	Attached   []byte
	Name, Type string // the attachment's file name and Content-Type
}

// ParseMail takes a received message apart.
func ParseMail(t testing.TB, raw []byte) Mail {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") {
		t.Fatalf("content type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	m := Mail{Header: msg.Header}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(part) // quoted-printable is decoded by the reader, base64 is not
		if strings.EqualFold(part.Header.Get("Content-Transfer-Encoding"), "base64") {
			if b, err = base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(b)), "")); err != nil {
				t.Fatal(err)
			}
		}
		if part.FileName() != "" {
			m.Attached, m.Name, m.Type = b, part.FileName(), part.Header.Get("Content-Type")
		} else {
			m.Text += string(b)
		}
	}
	return m
}
