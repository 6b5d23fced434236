package access

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// Single sign-on over a store in a bucket (versitygw, checking
// signatures): three replicas with no shared disk, started at once on an
// empty bucket, and a real Dex. The clients reach them at one address
// (https://localhost:FRONT, as behind a load balancer), and the test
// picks the replica of each request: every step of a sign-in lands on
// another replica than the step before.

// replicaPick routes a request for the front address to replica i
// (loginBucket.route reads it from the request's context).
type replicaPick struct{}

type loginBucket struct {
	s3    *harness.S3
	addr  string
	reps  []*harness.Served
	front string // localhost:PORT, where nothing listens
	pool  *x509.CertPool
	dex   *dexIdP
	work  string
	// haproxy: the front is HAProxy's (TCP, round robin); caFile the
	// replicas' CA for clients that need a file.
	haproxy bool
	caFile  string
}

// client is a person's browser or CLI: cookies, the replicas' shared CA
// and Dex's, every connection to the front address dialled to the
// replica the request's context names, redirects not followed.
func (lb *loginBucket) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: lb.pool}, DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == lb.front {
				i, _ := ctx.Value(replicaPick{}).(int)
				addr = fmt.Sprintf("127.0.0.1:%d", lb.reps[i%len(lb.reps)].Port)
			}
			return d.DialContext(ctx, network, addr)
		}}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// do sends a request to replica i (for the front address) and reads the
// answer.
func (lb *loginBucket) do(t *testing.T, cl *http.Client, i int, method, u string, form url.Values, hdr ...string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequestWithContext(context.WithValue(context.Background(), replicaPick{}, i), method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k := 0; k+1 < len(hdr); k += 2 {
		req.Header.Set(hdr[k], hdr[k+1])
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Errorf("%s %s (replica %d): %v", method, u, i%3, err)
		return nil, ""
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// newLoginBucket starts versitygw, Dex with users, and three replicas
// over an empty bucket, after before (if any) has put objects in it; with
// haproxy, HAProxy in front of them, whose address is then the front.
func newLoginBucket(t *testing.T, users []dexUser, before func(*harness.S3), haproxy bool) *loginBucket {
	t.Helper()
	lb := &loginBucket{s3: harness.StartS3(t), work: t.TempDir(), haproxy: haproxy}
	if before != nil {
		before(lb.s3)
	}
	lb.addr = lb.s3.Addr("site")
	lb.front = fmt.Sprintf("localhost:%d", harness.FreePort(t))
	dexPort := harness.FreePort(t)
	secret := "dex-client-secret-" + randomWord(t)
	secretFile := filepath.Join(lb.work, "oidc-secret")
	os.WriteFile(secretFile, []byte(secret+"\n"), 0o600)
	var b strings.Builder
	fmt.Fprintf(&b, "login {\n  issuer = %q\n  client_id = \"airgap\"\n  client_secret_file = %q\n  token_lifetime = \"12h\"\n}\n", dexIssuer(dexPort, false), secretFile)
	for _, u := range users {
		fmt.Fprintf(&b, "user %q {\n  allow = [\"registry.terraform.io/**\"]\n}\n", u.email)
	}
	accessFile := filepath.Join(lb.work, "access.hcl")
	os.WriteFile(accessFile, []byte(b.String()), 0o600)
	// The three at once on an empty bucket: they must agree on one sealing
	// key (and one CA, one set of URL keys), each created only if absent.
	lb.reps = make([]*harness.Served, 3)
	var wg sync.WaitGroup
	for i := range lb.reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lb.reps[i] = harness.Serve(t, harness.ServeOptions{Store: lb.addr, Env: lb.s3.Env(),
				Args: []string{"--metrics-listen", "off", "--access", accessFile, "--log-format", "json"}})
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for lb.pool == nil {
		if pemData, err := harness.CmdRun(t, lb.work, lb.s3.Env(), harness.Bin, "ca", "--store", lb.addr); err == nil && strings.Contains(pemData, "-----BEGIN") {
			lb.pool = x509.NewCertPool()
			lb.pool.AppendCertsFromPEM([]byte(pemData[strings.Index(pemData, "-----BEGIN"):]))
		} else if time.Now().After(deadline) {
			t.Fatalf("no shared CA in the bucket: %v", err)
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if lb.haproxy {
		// HAProxy in front (TCP, round robin): the clients' address is its.
		caFile := filepath.Join(lb.work, "ca.pem")
		pemData, _ := harness.CmdRun(t, lb.work, lb.s3.Env(), harness.Bin, "ca", "--store", lb.addr)
		os.WriteFile(caFile, []byte(pemData[strings.Index(pemData, "-----BEGIN"):]), 0o644)
		front, _ := harness.StartHAProxy(t, harness.HAProxyBin(t), caFile, lb.reps)
		lb.front, lb.caFile = strings.TrimPrefix(front, "https://"), caFile
	}
	// Dex once the address clients use is known (its callback is
	// registered there); the replicas need not wait for it.
	lb.dex = startDex(t, dexOptions{port: dexPort, secret: secret, redirectURIs: []string{"https://" + lb.front + "/oauth/callback"}, users: users, noMock: true})
	cl := lb.client()
	for i, r := range lb.reps {
		for {
			req, _ := http.NewRequestWithContext(context.WithValue(context.Background(), replicaPick{}, i), "GET", "https://"+lb.front+"/healthz", nil)
			if resp, err := cl.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d did not come up:\n%s", i, r.Logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return lb
}

// cliSignIn is 'terraform login' and its person, by hand, each step on
// the replica after the previous one's (starting at replica first): the
// authorization request, the identity provider's callback, the consent,
// the token exchange. It returns the token ("" after an error).
func (lb *loginBucket) cliSignIn(t *testing.T, first int, who dexUser) string {
	t.Helper()
	cl := lb.client()
	code, verifier, redirect := lb.codeOnly(t, cl, first, who)
	if code == "" {
		return ""
	}
	exchange := url.Values{"grant_type": {"authorization_code"}, "client_id": {"terraform-cli"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
	resp, body := lb.do(t, cl, first+3, "POST", "https://"+lb.front+"/oauth/token", exchange)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if resp == nil || resp.StatusCode != 200 || json.Unmarshal([]byte(body), &tok) != nil || tok.AccessToken == "" {
		t.Errorf("token exchange at replica %d: %v\n%s", (first+3)%3, status(resp), body)
		return ""
	}
	return tok.AccessToken
}

// admitted asks replica i whether token is admitted (the catalog: 200
// with it, 401 without or refused).
func (lb *loginBucket) admitted(t *testing.T, cl *http.Client, i int, token string) int {
	t.Helper()
	resp, _ := lb.do(t, cl, i, "GET", "https://"+lb.front+"/", nil, "Authorization", "Bearer "+token)
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// TestObjectStoreSignIns: 50 people sign in as 'terraform login' does,
// eight at a time, each step of each sign-in on another replica than the
// step before; every token is admitted by every replica. A token revoked
// with 'airgap token revoke --store s3://…' is refused by every replica
// within revokeBound, as is a catalog session signed out through one
// replica; 'token list' on the bucket shows both revoked.
func TestObjectStoreSignIns(t *testing.T) {
	t.Parallel()
	const people = 50
	users := make([]dexUser, people)
	for i := range users {
		users[i] = dexUser{fmt.Sprintf("person%02d@site.example", i), "password-" + randomWord(t)}
	}
	lb := newLoginBucket(t, users, nil, false)
	start := time.Now()
	tokens := make([]string, people)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range people {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			tokens[i] = lb.cliSignIn(t, i, users[i])
		}()
	}
	wg.Wait()
	t.Logf("%d sign-ins over three replicas in %v", people, time.Since(start).Round(time.Millisecond))
	if t.Failed() {
		return
	}
	// Every new token added one to the bucket's change counter, whichever
	// replica wrote it and however many wrote at once (If-Match, retried
	// on 412): a lost update would leave it short.
	if n := lb.changeCount(t); n != people {
		t.Errorf("the change counter after %d sign-ins: %d", people, n)
	}
	cl := lb.client()
	for i, tok := range tokens {
		for r := range lb.reps {
			if code := lb.admitted(t, cl, r, tok); code != 200 {
				t.Errorf("the token of sign-in %d, at replica %d: %d", i, r, code)
			}
		}
	}
	if code := lb.admitted(t, cl, 0, "airgap_"+randomWord(t)); code != 401 {
		t.Errorf("an unknown token: %d", code)
	}

	// Revoked through the bucket (no replica involved): refused by all.
	out := harness.MustRun(t, lb.work, lb.s3.Env(), harness.Bin, "token", "revoke", "--store", lb.addr, "--user", users[7].email)
	revokedAt := time.Now()
	const revokeBound = 3 * time.Second
	refused := map[int]time.Duration{}
	for len(refused) < len(lb.reps) && time.Since(revokedAt) < 2*revokeBound {
		for r := range lb.reps {
			if _, ok := refused[r]; !ok && lb.admitted(t, cl, r, tokens[7]) == 401 {
				refused[r] = time.Since(revokedAt)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("revoked (%s): refused after %v", strings.TrimSpace(out), refused)
	for r := range lb.reps {
		if d, ok := refused[r]; !ok || d > revokeBound {
			t.Errorf("replica %d refused the revoked token after %v (ok %v), want within %v", r, d, ok, revokeBound)
		}
		if code := lb.admitted(t, cl, r, tokens[8]); code != 200 {
			t.Errorf("another person's token at replica %d after the revocation: %d", r, code)
		}
	}
	// Revoked through a replica: a catalog session signed out on replica
	// 0 is refused by all within the bound.
	session := lb.browserSignInOut(t, users[9], func(token string) {
		for r := range lb.reps {
			if code := lb.admitted(t, cl, r, token); code != 200 {
				t.Errorf("a catalog session's token at replica %d: %d", r, code)
			}
		}
	})
	signedOut := time.Now()
	refused = map[int]time.Duration{}
	for len(refused) < len(lb.reps) && time.Since(signedOut) < 2*revokeBound {
		for r := range lb.reps {
			if _, ok := refused[r]; !ok && lb.admitted(t, cl, r, session) == 401 {
				refused[r] = time.Since(signedOut)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("signed out at replica 0: refused after %v", refused)
	for r := range lb.reps {
		if d, ok := refused[r]; !ok || d > revokeBound {
			t.Errorf("replica %d refused the signed-out session's token after %v (ok %v), want within %v", r, d, ok, revokeBound)
		}
	}
	list := harness.MustRun(t, lb.work, lb.s3.Env(), harness.Bin, "token", "list", "--store", lb.addr, "--json")
	var doc struct {
		Logins []struct {
			User    string `json:"user"`
			Via     string `json:"via"`
			Revoked string `json:"revoked"`
		} `json:"login_tokens"`
	}
	if err := json.Unmarshal([]byte(list), &doc); err != nil || len(doc.Logins) != people+1 {
		t.Fatalf("token list --store s3://: %v, %d tokens\n%s", err, len(doc.Logins), list)
	}
	for _, l := range doc.Logins {
		if (l.User == users[7].email || l.User == users[9].email && l.Via == "browser") != (l.Revoked != "") {
			t.Errorf("token list: %s revoked %q", l.User, l.Revoked)
		}
	}
}

// changeCount reads the sign-in state's change counter from the bucket.
func (lb *loginBucket) changeCount(t *testing.T) int {
	t.Helper()
	out, err := lb.s3.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(lb.s3.Bucket), Key: aws.String("site/state/logins/stamp")})
	if err != nil {
		t.Fatalf("reading the change counter: %v", err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(out.Body, 64))
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("the change counter: %q", b)
	}
	return n
}

// TestObjectStoreCodeOnce: the same authorization code sent to two
// replicas at the same moment gives one token, never two: taking a code
// is a create-if-absent in the bucket (without the condition both
// replicas read the code before either removed it, and both issued).
func TestObjectStoreCodeOnce(t *testing.T) {
	t.Parallel()
	const rounds = 12
	users := make([]dexUser, rounds)
	for i := range users {
		users[i] = dexUser{fmt.Sprintf("racer%02d@site.example", i), "password-" + randomWord(t)}
	}
	lb := newLoginBucket(t, users, nil, false)
	var doubles atomic.Int32
	for i := range rounds {
		// A sign-in up to its consent, then its code raced.
		cl := lb.client()
		code, verifier, redirect := lb.codeOnly(t, cl, i, users[i])
		if code == "" {
			t.FailNow()
		}
		exchange := url.Values{"grant_type": {"authorization_code"}, "client_id": {"terraform-cli"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
		var wins atomic.Int32
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for r := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				if resp, _ := lb.do(t, lb.client(), i+r, "POST", "https://"+lb.front+"/oauth/token", exchange); resp != nil && resp.StatusCode == 200 {
					wins.Add(1)
				}
			}()
		}
		close(gate)
		wg.Wait()
		switch wins.Load() {
		case 1:
		case 2:
			doubles.Add(1)
		default:
			t.Errorf("round %d: no replica exchanged the code", i)
		}
	}
	if n := doubles.Load(); n > 0 {
		t.Errorf("one code gave two tokens in %d of %d rounds", n, rounds)
	}
}

// codeOnly is cliSignIn up to the code, which it returns unexchanged
// ("" after an error): the authorization at replica first, Dex, the
// callback at the next replica, the consent at the one after.
func (lb *loginBucket) codeOnly(t *testing.T, cl *http.Client, first int, who dexUser) (code, verifier, redirect string) {
	t.Helper()
	verifier = randomWord(t) + randomWord(t) + randomWord(t)
	sum := sha256.Sum256([]byte(verifier))
	redirect = "http://localhost:10000/login"
	q := url.Values{"client_id": {"terraform-cli"}, "redirect_uri": {redirect}, "response_type": {"code"}, "state": {"s"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	resp, body := lb.do(t, cl, first, "GET", "https://"+lb.front+"/oauth/authorization?"+q.Encode(), nil)
	if resp == nil || resp.StatusCode/100 != 3 {
		t.Errorf("authorization at replica %d: %v %s", first%3, status(resp), body)
		return "", "", ""
	}
	next := lb.throughDex(t, cl, resp.Header.Get("Location"), who)
	if next == "" {
		return "", "", ""
	}
	resp, body = lb.do(t, cl, first+1, "GET", next, nil)
	m := consentRe.FindStringSubmatch(body)
	if resp == nil || m == nil {
		t.Errorf("callback at replica %d: %v\n%s", (first+1)%3, status(resp), body)
		return "", "", ""
	}
	resp, body = lb.do(t, cl, first+2, "POST", "https://"+lb.front+"/oauth/consent", url.Values{"consent": {html.UnescapeString(m[1])}, "action": {"allow"}})
	if resp == nil || resp.StatusCode/100 != 3 {
		t.Errorf("consent at replica %d: %v\n%s", (first+2)%3, status(resp), body)
		return "", "", ""
	}
	loc, _ := url.Parse(resp.Header.Get("Location"))
	return loc.Query().Get("code"), verifier, redirect
}

// status is an answer's status line ("no answer" for none).
func status(resp *http.Response) string {
	if resp == nil {
		return "no answer"
	}
	return resp.Status
}

// putObject writes an object into the test's bucket directly (as anyone
// with write access to the prefix could).
func putObject(t *testing.T, s *harness.S3, key string, data []byte) {
	t.Helper()
	if _, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
}

// TestObjectStoreSignInHostileObjects: what the bucket holds under the
// sign-in state is read bounded and checked. Records that are too large,
// not JSON, of another hash than their name, or not records at all, and
// a change counter that is not a number, admit nobody and stop nothing:
// replicas start, people sign in across them, and the counter is
// replaced by a number. A sealing key that is not one stops serve with
// a hint.
func TestObjectStoreSignInHostileObjects(t *testing.T) {
	t.Parallel()
	users := []dexUser{{"hostile@site.example", "password-" + randomWord(t)}}
	secret := "airgap_" + strings.Repeat("a", 43)
	sum := sha256.Sum256([]byte(secret))
	forgedName := hex.EncodeToString(sum[:])
	lb := newLoginBucket(t, users, func(s *harness.S3) {
		const tok = "site/state/logins/tokens/"
		putObject(t, s, tok+strings.Repeat("1", 64)+".json", bytes.Repeat([]byte("x"), 100<<10))
		putObject(t, s, tok+strings.Repeat("2", 64)+".json", []byte("{\"name\": [[[[["))
		// A valid-looking record under a name that is not its hash (a record
		// is looked up by its name, and checked to name its own hash).
		putObject(t, s, tok+strings.Repeat("3", 64)+".json", []byte(`{"name":"login~`+forgedName[:16]+`","sha256":"`+forgedName+`","subject":"x","issuer":"x","via":"cli","created":"2026-01-01T00:00:00Z","expires":"2099-01-01T00:00:00Z"}`))
		putObject(t, s, tok+"nested/"+forgedName+".json", []byte("{}"))
		putObject(t, s, "site/state/logins/stamp", bytes.Repeat([]byte("9"), 1000))
	}, false)
	cl := lb.client()
	if code := lb.admitted(t, cl, 0, secret); code != 401 {
		t.Errorf("a token whose record is filed under another name: %d", code)
	}
	tok := lb.cliSignIn(t, 0, users[0])
	if tok == "" {
		t.FailNow()
	}
	for r := range lb.reps {
		if code := lb.admitted(t, cl, r, tok); code != 200 {
			t.Errorf("a sign-in over a bucket with hostile objects, at replica %d: %d", r, code)
		}
	}
	if n := lb.changeCount(t); n != 1 {
		t.Errorf("the change counter that was not a number: now %d, want 1", n)
	}

	// A sealing key that is not one: serve refuses to start, and says what to do.
	s := harness.StartS3(t)
	addr := s.Addr("other")
	putObject(t, s, "other/state/logins/key", []byte(`{"secret":"c2hvcnQ="}`))
	accessFile := filepath.Join(t.TempDir(), "access.hcl")
	secretFile := filepath.Join(filepath.Dir(accessFile), "oidc-secret")
	os.WriteFile(secretFile, []byte("s\n"), 0o600)
	os.WriteFile(accessFile, []byte(fmt.Sprintf("login {\n  issuer = %q\n  client_id = \"airgap\"\n  client_secret_file = %q\n}\n", lb.dex.issuer, secretFile)), 0o600)
	srv := harness.Serve(t, harness.ServeOptions{Store: addr, Env: s.Env(), Args: []string{"--metrics-listen", "off", "--access", accessFile}})
	select {
	case <-srv.Done:
	case <-time.After(30 * time.Second):
		t.Fatalf("serve over a bucket whose sealing key is not one kept running:\n%s", srv.Logs.String())
	}
	if out := srv.Logs.String(); !strings.Contains(out, "holds no usable key") || !strings.Contains(out, "hint: ") {
		t.Errorf("serve over a bucket whose sealing key is not one:\n%s", out)
	}
}

// throughDex follows a sign-in at Dex from next, filling its password form
// as who, up to the URL back to the appliance ("" after an error).
func (lb *loginBucket) throughDex(t *testing.T, cl *http.Client, next string, who dexUser) string {
	t.Helper()
	for range 10 {
		u, _ := url.Parse(next)
		if u.Host == lb.front {
			return next
		}
		resp, body := lb.do(t, cl, 0, "GET", next, nil)
		if resp != nil && resp.StatusCode == 200 && strings.Contains(body, `name="password"`) {
			resp, body = lb.do(t, cl, 0, "POST", resp.Request.URL.String(), url.Values{"login": {who.email}, "password": {who.password}})
		}
		if resp == nil || resp.StatusCode/100 != 3 {
			t.Errorf("at Dex %s: %v\n%s", next, status(resp), body)
			return ""
		}
		loc, _ := resp.Request.URL.Parse(resp.Header.Get("Location"))
		next = loc.String()
	}
	t.Errorf("Dex did not send the browser back within 10 redirects (at %s)", next)
	return ""
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// browserSignInOut signs who in to the catalog in a browser (the sign-in
// on replica 0, Dex's callback on replica 1, the catalog page on replica
// 2), hands the session's token to check while it is live, signs out on
// replica 0, and returns the token, which the sign-out revoked.
func (lb *loginBucket) browserSignInOut(t *testing.T, who dexUser, check func(token string)) string {
	t.Helper()
	cl := lb.client()
	resp, body := lb.do(t, cl, 0, "GET", "https://"+lb.front+"/oauth/signin?next=%2F", nil)
	if resp == nil || resp.StatusCode/100 != 3 {
		t.Fatalf("catalog sign-in at replica 0: %s\n%s", status(resp), body)
	}
	next := lb.throughDex(t, cl, resp.Header.Get("Location"), who)
	if next == "" {
		t.FailNow()
	}
	if resp, body = lb.do(t, cl, 1, "GET", next, nil); resp == nil || resp.StatusCode/100 != 3 {
		t.Fatalf("callback at replica 1: %s\n%s", status(resp), body)
	}
	resp, body = lb.do(t, cl, 2, "GET", "https://"+lb.front+"/", nil)
	m := csrfRe.FindStringSubmatch(body)
	if resp == nil || resp.StatusCode != 200 || m == nil {
		t.Fatalf("the catalog at replica 2 after the sign-in: %s\n%s", status(resp), body)
	}
	var token string
	for _, c := range cl.Jar.Cookies(&url.URL{Scheme: "https", Host: lb.front, Path: "/"}) {
		if c.Name == "__Host-airgap_session" {
			token = c.Value
		}
	}
	if token == "" {
		t.Fatal("no session cookie after the sign-in")
	}
	check(token)
	resp, body = lb.do(t, cl, 0, "POST", "https://"+lb.front+"/oauth/signout", url.Values{"csrf": {html.UnescapeString(m[1])}},
		"Origin", "https://"+lb.front)
	if resp == nil || resp.StatusCode != 200 || !strings.Contains(body, "token is revoked") {
		t.Fatalf("sign-out at replica 0: %s\n%s", status(resp), body)
	}
	return token
}

// TestObjectStoreTerraformLogin: real 'terraform login' through HAProxy
// in front of three bucket replicas (its discovery and its token
// exchange on whichever replica HAProxy picks), the person's browser
// steps each on another replica; the token terraform stores is admitted
// by every replica.
func TestObjectStoreTerraformLogin(t *testing.T) {
	t.Parallel()
	who := dexUser{"tf@site.example", "password-" + randomWord(t)}
	lb := newLoginBucket(t, []dexUser{who}, nil, true)
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".terraform.d"), 0o700)
	nb, _ := noBrowserEnv(t)
	env := append([]string{"HOME=" + home, "SSL_CERT_FILE=" + lb.caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}, nb...)
	out, err := cliLogin(t, harness.TerraformBin(t), lb.front, env, func(authURL string) {
		cl := lb.client()
		resp, body := lb.do(t, cl, 0, "GET", authURL, nil)
		if resp == nil || resp.StatusCode/100 != 3 {
			t.Errorf("authorization at replica 0: %s\n%s", status(resp), body)
			return
		}
		next := lb.throughDex(t, cl, resp.Header.Get("Location"), who)
		if next == "" {
			return
		}
		resp, body = lb.do(t, cl, 1, "GET", next, nil)
		m := consentRe.FindStringSubmatch(body)
		if resp == nil || m == nil {
			t.Errorf("callback at replica 1: %s\n%s", status(resp), body)
			return
		}
		resp, body = lb.do(t, cl, 2, "POST", "https://"+lb.front+"/oauth/consent", url.Values{"consent": {html.UnescapeString(m[1])}, "action": {"allow"}})
		if resp == nil || resp.StatusCode/100 != 3 {
			t.Errorf("consent at replica 2: %s\n%s", status(resp), body)
			return
		}
		// Terraform's own listener takes the code.
		if r, err := http.Get(resp.Header.Get("Location")); err == nil {
			r.Body.Close()
		} else if !cliClosed(err) {
			t.Errorf("handing the code to terraform: %v", err)
		}
	}, true)
	if err != nil {
		t.Fatalf("terraform login %s: %v\n%s", lb.front, err, out)
	}
	if !strings.Contains(out, "Success! Terraform has obtained and saved an API token") {
		t.Errorf("terraform login did not say it saved a token:\n%s", out)
	}
	creds, _ := credentialsFile(t, home)
	tok := creds[lb.front]
	if tok == "" {
		t.Fatalf("terraform stored no token for %s: %v\n%s", lb.front, creds, out)
	}
	cl := lb.client()
	for r := range lb.reps {
		if code := lb.admitted(t, cl, r, tok); code != 200 {
			t.Errorf("terraform's token at replica %d: %d", r, code)
		}
	}
}
