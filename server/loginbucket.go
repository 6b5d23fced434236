package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/airgap/airgap/bundle/store/objstore"
	"github.com/airgap/airgap/server/access"
)

// The sign-in state of a store in a bucket, shared by every replica and
// by 'airgap token': the same files as a directory store's
// STATE/logins (access.LoginState says what each is), as the objects
// state/logins/<sub>/<name>, and one more, state/logins/stamp, a counter
// every change to tokens/ adds one to, which replicas ask for (one HEAD)
// every second to know when to list tokens/ again.
//
// Every write is conditional: a file is created with If-None-Match: * (the
// key, a code, a used sign-in, a token's record: of replicas writing at
// once exactly one wins and the others are told, fs.ErrExist); a replaced
// record and the counter are written with If-Match on the ETag read, read
// again and retried on 412 (at most loginAttempts rounds), so no replica's
// change overwrites another's. A code is taken by exactly one request: the
// one whose If-None-Match create of CODE.taken succeeds; the marker stays
// until the code's file age is up (the sweep removes both), so a request
// that read the code before it was deleted still loses.
//
// Everything read from the bucket is hostile (anyone with write access to
// the prefix): an object is read to at most access.MaxLoginStateFile
// (64 KiB) and validated by LoginState as a file from disk is (a record
// must be valid and name its own hash, a key 32 bytes, a code a JSON
// object with an expiry); the counter to at most 64 bytes, and one that is
// not a number is replaced (conditionally) by 1. A listing is read to at
// most access.MaxLoginNames (100,000) names, names with a '/' skipped.
// Names longer than maxLoginName (no name LoginState makes is) or with
// a '/' are dropped as they are listed, never held: anyone with write
// access could make 100,000 of them 1,024 bytes long (some 200 MiB of
// peak memory at each listing, every 10 s).
// Worst case per replica: 64 KiB per read, some 20 MiB for a full listing,
// and at startup or a full re-read one GET per record (50,000 at the
// limit); every call times out after loginTimeout.
type bucketLogins struct{ c *objstore.Client }

// BucketLogins is the sign-in state of the store in c's bucket.
func BucketLogins(c *objstore.Client) access.LoginStore { return bucketLogins{c} }

const (
	loginObjects  = "state/logins/"
	loginStamp    = loginObjects + "stamp"
	loginAttempts = 20
	loginTimeout  = 10 * time.Second // some calls are on a request's path (a token another replica issued)
	takenSuffix   = ".taken"
	maxLoginName  = 128 // the longest a name LoginState makes is 64 hex digits and an extension
)

func (b bucketLogins) key(sub, name string) string {
	if sub == "" {
		return loginObjects + name
	}
	return loginObjects + sub + "/" + name
}

func (b bucketLogins) Where(sub, name string) string {
	a := b.c.Addr()
	pre := a.Prefix
	if pre != "" {
		pre += "/"
	}
	return objstore.Scheme + a.Bucket + "/" + pre + b.key(sub, name)
}

func ctxLogin() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), loginTimeout)
}

// checkLoginName refuses a name that would reach outside sub (LoginState's
// names are hex with an extension).
func checkLoginName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
		return fmt.Errorf("the login state: %q is not a file name", name)
	}
	return nil
}

func (b bucketLogins) Read(sub, name string) ([]byte, error) {
	if err := checkLoginName(name); err != nil {
		return nil, err
	}
	ctx, cancel := ctxLogin()
	defer cancel()
	data, _, err := b.c.ReadSmall(ctx, b.key(sub, name), access.MaxLoginStateFile)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, fmt.Errorf("%w: %v", fs.ErrNotExist, err)
	}
	return data, err
}

func (b bucketLogins) Create(sub, name string, data []byte) error {
	if err := checkLoginName(name); err != nil {
		return err
	}
	ctx, cancel := ctxLogin()
	defer cancel()
	if _, err := b.c.PutBytes(ctx, b.key(sub, name), "", data); errors.Is(err, objstore.ErrPrecondition) {
		return fmt.Errorf("%w: %v", fs.ErrExist, err)
	} else if err != nil {
		return err
	}
	b.changed(ctx, sub)
	return nil
}

// Write replaces a file: created if absent, else replaced only if it is
// still the version read (If-Match), read again on 412.
func (b bucketLogins) Write(sub, name string, data []byte) error {
	if err := checkLoginName(name); err != nil {
		return err
	}
	ctx, cancel := ctxLogin()
	defer cancel()
	key := b.key(sub, name)
	etag := ""
	for attempt := 0; ; attempt++ {
		_, err := b.c.PutBytes(ctx, key, etag, data)
		if err == nil {
			b.changed(ctx, sub)
			return nil
		}
		if !errors.Is(err, objstore.ErrPrecondition) && !(etag != "" && errors.Is(err, objstore.ErrNotFound)) {
			return err
		}
		if attempt == loginAttempts {
			return fmt.Errorf("%w (other writers kept changing it: %d attempts)", err, loginAttempts)
		}
		o, err := b.c.Head(ctx, key)
		switch {
		case errors.Is(err, objstore.ErrNotFound):
			etag = ""
		case err != nil:
			return err
		default:
			etag = o.ETag
		}
	}
}

func (b bucketLogins) Remove(sub, name string) error {
	if err := checkLoginName(name); err != nil {
		return err
	}
	ctx, cancel := ctxLogin()
	defer cancel()
	if err := b.c.Delete(ctx, b.key(sub, name)); err != nil {
		return err
	}
	b.changed(ctx, sub)
	return nil
}

func (b bucketLogins) List(sub string, max int, times bool) ([]access.LoginEntry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*loginTimeout)
	defer cancel()
	max = min(max, access.MaxLoginNames)
	pre := b.key(sub, "")
	objs, err := b.c.ListFirstKept(ctx, pre, max, func(name string) bool {
		n := strings.TrimPrefix(name, pre)
		return len(n) <= maxLoginName && !strings.Contains(n, "/")
	})
	if err != nil {
		return nil, err
	}
	out := make([]access.LoginEntry, 0, len(objs))
	for _, o := range objs {
		n := strings.TrimPrefix(o.Name, b.key(sub, ""))
		if n == "" || strings.Contains(n, "/") {
			continue
		}
		out = append(out, access.LoginEntry{Name: n, Modified: o.Modified})
	}
	return out, nil
}

// Take: the one request whose create of NAME.taken succeeds has the code.
func (b bucketLogins) Take(sub, name string) ([]byte, error) {
	data, err := b.Read(sub, name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := ctxLogin()
	defer cancel()
	if _, err := b.c.PutBytes(ctx, b.key(sub, name+takenSuffix), "", []byte("taken\n")); err != nil {
		if errors.Is(err, objstore.ErrPrecondition) {
			return nil, fmt.Errorf("%w: taken by another request", fs.ErrNotExist)
		}
		return nil, err
	}
	b.c.Delete(ctx, b.key(sub, name))
	return data, nil
}

// Stamp is the change counter's ETag ("" while there is none).
func (b bucketLogins) Stamp() (string, error) {
	ctx, cancel := ctxLogin()
	defer cancel()
	o, err := b.c.Head(ctx, loginStamp)
	if errors.Is(err, objstore.ErrNotFound) {
		return "", nil
	}
	return o.ETag, err
}

// changed adds one to the change counter after a change to tokens/, with
// If-Match on the version read (If-None-Match: * for the first), read
// again on 412: two replicas never write the same count, so each change
// gives the counter a new ETag. A counter that cannot be written is
// logged by nobody: replicas then see the change at their next full
// re-read (10 s).
func (b bucketLogins) changed(ctx context.Context, sub string) {
	if sub != "tokens" {
		return
	}
	for attempt := range loginAttempts {
		if attempt > 0 {
			time.Sleep(time.Duration(10+rand.IntN(90)) * time.Millisecond)
		}
		data, o, err := b.c.ReadSmall(ctx, loginStamp, 64)
		n := uint64(0)
		switch {
		case errors.Is(err, objstore.ErrNotFound):
			o.ETag = ""
		case errors.Is(err, objstore.ErrTooLarge):
			h, herr := b.c.Head(ctx, loginStamp)
			if herr != nil {
				return
			}
			o.ETag = h.ETag
		case err != nil:
			return
		default:
			n, _ = strconv.ParseUint(strings.TrimSpace(string(data)), 10, 63)
		}
		_, err = b.c.PutBytes(ctx, loginStamp, o.ETag, []byte(strconv.FormatUint(n+1, 10)+"\n"))
		if !errors.Is(err, objstore.ErrPrecondition) {
			return
		}
	}
}
