// Package s3test starts a real S3 server for a test binary: versitygw, an
// S3 gateway over a local folder (github.com/versity/versitygw, which
// scripts/test installs into Dir). The server lives in a temporary folder,
// listens on a free loopback port, takes its own keys (so the keys' path
// is the one tested), and is stopped by Stop in TestMain; Bucket makes a
// new bucket for each test, as pgtest makes a database.
package s3test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tally-dev/tally/lake"
)

// AccessKey and SecretKey are the server's one account's keys.
const (
	AccessKey = "s3test-access-7c41"
	SecretKey = "s3test-secret-key-0d9e2b"
)

// Region is the server's region.
const Region = "us-east-1"

// Version is the versitygw scripts/test installs.
const Version = "v1.8.0"

type server struct {
	dir      string
	endpoint string
	cmd      *exec.Cmd
	client   *s3.Client
	err      error
}

var (
	once    sync.Once
	shared  *server
	buckets atomic.Int64
)

// Dir is the folder scripts/test installs versitygw into:
// $XDG_CACHE_HOME/tally/bin, or ~/.cache/tally/bin.
func Dir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "tally", "bin")
}

// Program is the versitygw the tests run: $TALLY_VERSITYGW, else the one
// in Dir, else one on PATH.
func Program() (string, error) {
	if p := os.Getenv("TALLY_VERSITYGW"); p != "" {
		return p, nil
	}
	p := filepath.Join(Dir(), "versitygw")
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("versitygw, the S3 server of the lake's tests, is neither in %s nor on PATH: scripts/test installs it (GOBIN=%s go install github.com/versity/versitygw/cmd/versitygw@%s, about 4 minutes)", Dir(), Dir(), Version)
}

// Endpoint starts the server the first time and returns its address. A
// test fails when versitygw is not installed: the tests it backs are the
// proof that a warehouse on S3 works, not optional.
func Endpoint(t testing.TB) string {
	t.Helper()
	once.Do(func() { shared = start() })
	if shared.err != nil {
		t.Fatalf("s3test: %v", shared.err)
	}
	return shared.endpoint
}

// Bucket makes a new, empty bucket on the server and returns its name.
func Bucket(t testing.TB) string {
	t.Helper()
	Endpoint(t)
	name := fmt.Sprintf("t%d-%d", os.Getpid(), buckets.Add(1))
	if _, err := shared.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("s3test: create bucket %s: %v", name, err)
	}
	return name
}

// Warehouse makes a new bucket and returns a warehouse in it and how
// tally-lake reaches it: path-style, with the server's keys.
func Warehouse(t testing.TB) (string, *lake.S3) {
	t.Helper()
	b := Bucket(t)
	return "s3://" + b + "/lake", &lake.S3{Endpoint: shared.endpoint, Region: Region, PathStyle: true, AccessKey: AccessKey, SecretKey: SecretKey}
}

// Keys are the keys of the objects in bucket under prefix, in order.
func Keys(t testing.TB, bucket, prefix string) []string {
	t.Helper()
	Endpoint(t)
	var out []string
	p := s3.NewListObjectsV2Paginator(shared.client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("s3test: list %s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, aws.ToString(o.Key))
		}
	}
	return out
}

// Put writes body to bucket's key.
func Put(t testing.TB, bucket, key string, body []byte) {
	t.Helper()
	Endpoint(t)
	if _, err := shared.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("s3test: put %s/%s: %v", bucket, key, err)
	}
}

// Stop stops the server, if one was started, and removes its folder.
func Stop() {
	if shared == nil || shared.cmd == nil {
		return
	}
	_ = shared.cmd.Process.Signal(syscall.SIGTERM)
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

func start() *server {
	s := &server{}
	prog, err := Program()
	if err != nil {
		s.err = err
		return s
	}
	if s.dir, err = os.MkdirTemp("", "tally-s3-"); err != nil {
		s.err = err
		return s
	}
	root := filepath.Join(s.dir, "root")
	if err := os.Mkdir(root, 0o750); err != nil {
		s.err = err
		return s
	}
	port, err := freePort()
	if err != nil {
		s.err = err
		return s
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s.endpoint = "http://" + addr
	// The keys as flags, not ROOT_ACCESS_KEY in the environment, which
	// the tests' own processes would inherit.
	s.cmd = exec.Command(prog, "--port", addr, "--access", AccessKey, "--secret", SecretKey, "--region", Region, "--quiet", "posix", root)
	s.cmd.Dir = s.dir
	log, err := os.Create(filepath.Join(s.dir, "server.log"))
	if err != nil {
		s.err = err
		return s
	}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		s.err = fmt.Errorf("start %s: %w", prog, err)
		return s
	}
	s.client = s3.New(s3.Options{
		BaseEndpoint: aws.String(s.endpoint), Region: Region, UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = s.client.ListBuckets(ctx, &s3.ListBucketsInput{})
		cancel()
		if err == nil {
			return s
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			s.err = fmt.Errorf("versitygw did not answer within 30 s: %v; its log:\n%s", err, out)
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
