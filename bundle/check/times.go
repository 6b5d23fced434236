package check

import (
	"fmt"
	"time"

	"github.com/airgap/airgap/bundle"
)

// timeNow is the clock of a Checker whose Options.Now is zero.
var timeNow = time.Now

// stamp formats a signature time for messages.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// checkBundleTime refuses a bundle signature dated more than MaxClockAhead
// after now: this machine cannot know when a bundle was really signed,
// but it knows one was not signed next year. (A wrong clock here is told
// apart in the hint.)
func checkBundleTime(signed, now time.Time) error {
	if signed.IsZero() || !signed.After(now.Add(MaxClockAhead)) {
		return nil
	}
	return fmt.Errorf("%w: the bundle's signature is dated %s, more than a day after this machine's clock (%s)\n"+
		"hint: either this machine's clock is wrong (check it: date -u) or the signature's date was forged; do not import the bundle until you know which",
		bundle.ErrSignatureTime, stamp(signed), stamp(now))
}

// checkSumsTime refuses a provider's SHA256SUMS signature dated where it
// cannot be: more than MaxClockAhead after this machine's clock (now), or
// more than signatureSlack after the bundle's own signature — the bundle
// was signed after everything in it was, so a later date was forged (a
// signature "from 2099" would outlive any expiry or revocation judged by
// date). The second rule needs a signature time that is the time of
// signing: a bundle with manifest.Created (SOURCE_DATE_EPOCH) was signed
// by older airgaps at that date instead, so for those only the first rule
// holds (export now signs such bundles no earlier than what they carry).
func checkSumsTime(entry string, created, bundleSigned, now time.Time, reproducible bool) error {
	if created.After(now.Add(MaxClockAhead)) {
		return fmt.Errorf("%w: %s: its SHA256SUMS signature is dated %s, more than a day after this machine's clock (%s)\n"+
			"hint: the publisher's signature carries a forged date (or this machine's clock is wrong: check it); do not import the bundle",
			bundle.ErrSignatureTime, entry, stamp(created), stamp(now))
	}
	if reproducible || bundleSigned.IsZero() || !created.After(bundleSigned.Add(signatureSlack)) {
		return nil
	}
	return fmt.Errorf("%w: %s: its SHA256SUMS signature is dated %s, after the bundle itself was signed (%s): a bundle cannot carry a signature made after it\n"+
		"hint: the date was forged, or the exporting machine's clock was far behind; do not import the bundle; export it again and check the publisher's signature",
		bundle.ErrSignatureTime, entry, stamp(created), stamp(bundleSigned))
}
