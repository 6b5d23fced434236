package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// VersitygwVersion is the S3 server the object-storage tests run: a real
// one that checks request signatures (403 on a wrong secret) and honours
// conditional writes, over a posix directory of the test's own. It is
// built from its Go module into the test cache the first time.
const VersitygwVersion = "1.8.0" // ~4 min to build on 2 cores

var versitygwBuild struct {
	once      sync.Once
	path, err string
}

// VersitygwBin returns the path of versitygw, building it on first use;
// one that cannot be built fails the test (object storage must not go
// untested).
func VersitygwBin(t *testing.T) string {
	t.Helper()
	versitygwBuild.once.Do(func() {
		versitygwBuild.path, versitygwBuild.err = BuildFromModule("github.com/versity/versitygw", VersitygwVersion, "./cmd/versitygw", "versitygw-"+VersitygwVersion, "")
	})
	if versitygwBuild.err != "" {
		t.Fatalf("versitygw %s is required by the object-storage tests and could not be built: %s\nhint: it is built from the Go module proxy (go mod download github.com/versity/versitygw@v%s)", VersitygwVersion, versitygwBuild.err, VersitygwVersion)
	}
	return versitygwBuild.path
}

// S3 is a running S3 server on loopback with a bucket of the test's own.
type S3 struct {
	Endpoint       string // http://127.0.0.1:PORT
	Access, Secret string
	Bucket         string
	Dir            string // the posix directory it keeps the buckets in
	Logs           *LockedBuffer
	Proc           *os.Process
	tmp            string // TMPDIR for the airgap processes (serve's replica directory, import's scratch)
}

// Env is the environment an airgap or a client needs to reach it: the
// AWS chain's credentials, and nothing of the machine's own AWS set-up;
// and a TMPDIR of the test's own, so that a killed serve or import
// leaves its private directory there, not in /tmp.
func (s *S3) Env() []string {
	return []string{"TMPDIR=" + s.tmp, "AWS_ACCESS_KEY_ID=" + s.Access, "AWS_SECRET_ACCESS_KEY=" + s.Secret, "AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true", "AWS_PROFILE=", "AWS_SESSION_TOKEN="}
}

// Addr is the store address of prefix in the test's bucket.
func (s *S3) Addr(prefix string) string {
	return fmt.Sprintf("s3://%s/%s?endpoint=%s&use_path_style=true", s.Bucket, prefix, url.QueryEscape(s.Endpoint))
}

// Client is an SDK client for the server, for tests that look into or
// tamper with the bucket directly.
func (s *S3) Client() *s3.Client {
	return s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(s.Access, s.Secret, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// StartS3 starts versitygw (posix backend, random root keys) on a free
// loopback port, waits for it, and creates a fresh bucket; the test's end
// kills it.
func StartS3(t *testing.T) *S3 {
	t.Helper()
	bin := VersitygwBin(t)
	rnd := func(n int) string {
		b := make([]byte, n)
		rand.Read(b)
		return hex.EncodeToString(b)
	}
	s := &S3{Access: "AG" + rnd(8), Secret: rnd(20), Bucket: "airgap-" + rnd(4), Dir: t.TempDir(), Logs: &LockedBuffer{}, tmp: t.TempDir()}
	port := FreePort(t)
	s.Endpoint = fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--port", fmt.Sprintf("127.0.0.1:%d", port), "--health", "/health", "--quiet", "posix", s.Dir)
	cmd.Env = append(BaseEnv(), "ROOT_ACCESS_KEY="+s.Access, "ROOT_SECRET_KEY="+s.Secret)
	cmd.Stdout, cmd.Stderr = s.Logs, s.Logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Proc = cmd.Process
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		s.Proc.Kill()
		<-done
		if t.Failed() {
			t.Logf("versitygw log:\n%s", s.Logs.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(s.Endpoint + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		select {
		case <-done:
			t.Fatalf("versitygw exited:\n%s", s.Logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not come up: %v\n%s", err, s.Logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &s.Bucket}); err != nil {
		t.Fatalf("creating bucket %s: %v\n%s", s.Bucket, err, s.Logs.String())
	}
	return s
}
