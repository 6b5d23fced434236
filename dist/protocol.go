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
}

// SigningKeys is the signing_keys object of a download document.
type SigningKeys struct {
	GPGPublicKeys []SigningKey `json:"gpg_public_keys"`
}
