package dist

// ProviderDownload is the provider registry protocol's download document
// (GET …/:namespace/:type/:version/download/:os/:arch): what the server
// answers and the registry client reads.
type ProviderDownload struct {
	Protocols           []string    `json:"protocols,omitempty"`
	OS                  string      `json:"os"`
	Arch                string      `json:"arch"`
	Filename            string      `json:"filename"`
	DownloadURL         string      `json:"download_url"`
	ShasumsURL          string      `json:"shasums_url"`
	ShasumsSignatureURL string      `json:"shasums_signature_url"`
	Shasum              string      `json:"shasum"`
	SigningKeys         SigningKeys `json:"signing_keys"`
	// Packages is OpenTofu 1.12's optional "packages" object: every
	// platform's hashes ("zh:", "h1:") and size, keyed "os_arch", from
	// which 'tofu init' records every platform's hashes in the lock file
	// (Terraform's internal/getproviders registry client; RFC
	// 20251027-provider-registry-hashes). Terraform and older OpenTofu
	// ignore it. airgap's registry client reads it but trusts none of it:
	// export checks every package against the signed SHA256SUMS itself.
	Packages map[string]PackageHashes `json:"packages,omitempty"`
}

// PackageHashes is one platform's entry in ProviderDownload.Packages.
type PackageHashes struct {
	Hashes      []string `json:"hashes"`
	PackageSize int64    `json:"package_size"`
}

// SigningKeys is the signing_keys object of a download document.
type SigningKeys struct {
	GPGPublicKeys []SigningKey `json:"gpg_public_keys"`
}
