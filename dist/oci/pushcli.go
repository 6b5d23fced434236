package oci

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// PasswordEnv is the environment variable 'airgap push --username' reads
// the password from.
const PasswordEnv = "AIRGAP_REGISTRY_PASSWORD"

// Password returns the registry password for --username: the first line
// of r when fromStdin (--password-stdin), else $AIRGAP_REGISTRY_PASSWORD.
func Password(fromStdin bool, r io.Reader) (string, error) {
	if fromStdin {
		line, err := bufio.NewReader(io.LimitReader(r, 64<<10)).ReadString('\n')
		if err != nil && err != io.EOF {
			return "", fmt.Errorf("reading the password from stdin: %w", err)
		}
		return strings.TrimRight(line, "\r\n"), nil
	}
	p, ok := os.LookupEnv(PasswordEnv)
	if !ok {
		return "", errors.New("--username needs a password\nhint: set " + PasswordEnv + " or pass --password-stdin")
	}
	return p, nil
}

// PushStore pushes the store at dir (see Push) and reports to w: a line
// per tag, a summary and the CLI configuration block for OpenTofu. With
// jsonOut it reports nothing and only returns the result, for the caller to
// print as JSON.
func PushStore(ctx context.Context, dir string, opt PushOptions, jsonOut bool, w io.Writer) (*PushResult, error) {
	st, err := store.Open(dir)
	if err != nil {
		return nil, err
	}
	return PushOpenStore(ctx, st, opt, jsonOut, w)
}

// PushOpenStore is PushStore of a store already open: from a store in
// object storage each layer streams from the bucket, hashed as it is
// sent (an object that does not match its name fails the push before the
// registry commits the blob).
func PushOpenStore(ctx context.Context, st *store.Store, opt PushOptions, jsonOut bool, w io.Writer) (*PushResult, error) {
	opt.OpenBlob = func(d verify.Digest) (io.ReadCloser, error) {
		if rc, _, remote, err := st.StreamBlob(ctx, d); remote {
			return rc, err
		}
		return st.OpenBlob(d)
	}
	if !jsonOut {
		opt.Progress = func(t TagResult) {
			if t.UpToDate {
				fmt.Fprintf(w, "up to date  %s:%s\n", t.Repository, t.Tag)
			} else {
				fmt.Fprintf(w, "pushed      %s:%s (%d blobs, %d bytes)\n", t.Repository, t.Tag, t.Blobs, t.Bytes)
			}
		}
	}
	res, err := Push(ctx, st.Catalog(), opt)
	if err != nil {
		return nil, err
	}
	res.Left = Left(st.Catalog())
	if res.Tags == nil {
		res.Tags = []TagResult{}
	}
	if jsonOut {
		return res, nil
	}
	for _, l := range res.Left {
		fmt.Fprintf(w, "not pushed  %s\n", l)
	}
	fmt.Fprintf(w, "%d repositories, %d tags (%d pushed, %d up to date), %d blobs and %d bytes sent to %s\n",
		res.Repositories, len(res.Tags), res.TagsPushed, len(res.Tags)-res.TagsPushed, res.BlobsPushed, res.BytesPushed, res.Target)
	if res.Repositories > 0 {
		fmt.Fprintf(w, "hint: OpenTofu installs from it with this block in its CLI configuration:\n%s\n", mirrorHint(res.Target))
	}
	return res, nil
}

// mirrorHint is the CLI configuration block (indented for a hint) that
// points OpenTofu at the providers pushed under target. The ${…} are
// OpenTofu's template variables, written as they are.
func mirrorHint(target string) string {
	return dist.Indent(fmt.Sprintf("provider_installation {\n  oci_mirror {\n    repository_template = %q\n  }\n}\n",
		strings.TrimSuffix(target, "/")+"/${hostname}/${namespace}/${type}"), "  ")
}
