// Package docs tests the documentation and the catalog: the README's and
// docs/'s runnable blocks and links, provider docs offline (with a large
// provider measured), the catalog page in Chromium with axe-core, and
// Chromium's net log proving the page stays on loopback.
package docs
