// Package pgtest starts a real PostgreSQL server for a test binary, from
// Debian's postgresql package (scripts/test installs it): the shared
// catalog database of the lake's tests. The server lives in a temporary
// folder, listens on a free loopback port, takes a password (so the
// password path is the one tested), and is stopped by Stop in TestMain.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// User and Password are the server's one role.
const (
	User     = "tally"
	Password = "pgtest-catalog-password"
)

type server struct {
	dir  string
	port int
	cmd  *exec.Cmd
	err  error
}

var (
	once   sync.Once
	shared *server
	dbs    atomic.Int64
)

// Database starts the server the first time, creates a new empty
// database on it and returns its URL, without the password (give it
// Password). A test fails when PostgreSQL is not installed: the tests it
// backs are the proof that a shared catalog works, not optional.
func Database(t testing.TB) string {
	t.Helper()
	once.Do(func() { shared = start() })
	if shared.err != nil {
		t.Fatalf("pgtest: %v", shared.err)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbs.Add(1))
	db, err := sql.Open("pgx", shared.url("postgres", true))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	return shared.url(name, false)
}

func (s *server) url(db string, withPassword bool) string {
	u := &url.URL{Scheme: "postgres", User: url.User(User), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), Path: "/" + db, RawQuery: "sslmode=disable"}
	if withPassword {
		u.User = url.UserPassword(User, Password)
	}
	return u.String()
}

// Stop stops the server, if one was started, and removes its folder.
func Stop() {
	if shared == nil || shared.cmd == nil {
		return
	}
	// SIGINT is PostgreSQL's fast shutdown: it ends the sessions and
	// stops at once, with no checkpoint wait worth having for a
	// throwaway folder.
	_ = shared.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { _ = shared.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = shared.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(shared.dir)
}

// binDir finds Debian's PostgreSQL programs (the newest version) or, failing
// that, initdb on PATH.
func binDir() (string, error) {
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) > 0 {
		sort.Slice(m, func(i, j int) bool { return version(m[i]) > version(m[j]) })
		return filepath.Dir(m[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb, no initdb on PATH): scripts/test installs Debian's postgresql package")
}

func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

// start runs initdb and the server. PostgreSQL refuses to run as root, so
// as root the server runs as the postgres user Debian's package makes.
func start() *server {
	s := &server{}
	bin, err := binDir()
	if err != nil {
		s.err = err
		return s
	}
	s.dir, err = os.MkdirTemp("", "tally-pg-")
	if err != nil {
		s.err = err
		return s
	}
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			s.err = fmt.Errorf("running as root, PostgreSQL needs another user and there is no postgres user: %w", err)
			return s
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(s.dir, uid, gid); err != nil {
			s.err = err
			return s
		}
	}
	pw := filepath.Join(s.dir, "pw")
	if err := os.WriteFile(pw, []byte(Password+"\n"), 0o600); err != nil {
		s.err = err
		return s
	}
	if cred != nil {
		_ = os.Chown(pw, int(cred.Uid), int(cred.Gid))
	}
	data := filepath.Join(s.dir, "data")
	run := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(filepath.Join(bin, name), args...)
		c.Dir = s.dir
		if cred != nil {
			c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		return c
	}
	if out, err := run("initdb", "-D", data, "-U", User, "--pwfile", pw, "--auth", "scram-sha-256", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		s.err = fmt.Errorf("initdb: %v: %s", err, out)
		return s
	}
	s.port, err = freePort()
	if err != nil {
		s.err = err
		return s
	}
	// fsync off: a test server's data need not survive a power cut, and
	// the commits the tests race would otherwise wait on the disk.
	s.cmd = run("postgres", "-D", data, "-p", strconv.Itoa(s.port), "-h", "127.0.0.1", "-k", s.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	log, err := os.Create(filepath.Join(s.dir, "server.log"))
	if err != nil {
		s.err = err
		return s
	}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		s.err = fmt.Errorf("start postgres: %w", err)
		return s
	}
	db, err := sql.Open("pgx", s.url("postgres", true))
	if err != nil {
		s.err = err
		return s
	}
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return s
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			s.err = fmt.Errorf("postgres did not accept connections within a minute: %v; its log:\n%s", err, out)
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
