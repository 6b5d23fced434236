package registry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ModuleVersions lists the versions of host/ns/name/system.
func (c *Client) ModuleVersions(ctx context.Context, host, ns, name, system string) ([]string, error) {
	base, err := c.service(ctx, host, "modules.v1")
	if err != nil {
		return nil, err
	}
	var doc struct {
		Modules []struct {
			Versions []struct {
				Version string `json:"version"`
			} `json:"versions"`
		} `json:"modules"`
	}
	if _, err := c.getJSON(ctx, rel(base, ns, name, system, "versions"), &doc, host); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("module %s/%s/%s/%s does not exist on its registry: %w", host, ns, name, system, ErrNotFound)
		}
		return nil, err
	}
	if len(doc.Modules) == 0 {
		return nil, fmt.Errorf("module %s/%s/%s/%s: %w (no versions)", host, ns, name, system, ErrNotFound)
	}
	var out []string
	for _, v := range doc.Modules[0].Versions {
		if s, ok := c.usableVersion("module "+host+"/"+ns+"/"+name+"/"+system, v.Version); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// ModuleLocation asks where a module version's source is: the JSON
// "location" of a 200 answer, else the X-Terraform-Get header (200 or 204).
// A relative location is resolved against the download URL.
func (c *Client) ModuleLocation(ctx context.Context, host, ns, name, system, version string) (string, error) {
	base, err := c.service(ctx, host, "modules.v1")
	if err != nil {
		return "", err
	}
	u := rel(base, ns, name, system, version, "download")
	resp, err := c.do(ctx, c.http, c.apiRequest(ctx, u, host))
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	what := fmt.Sprintf("module %s/%s/%s/%s %s", host, ns, name, system, version)
	if resp.StatusCode == 404 {
		return "", fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	if resp.StatusCode != 200 && resp.StatusCode != 204 {
		return "", fmt.Errorf("%s: download answered %w: %s", what, ErrStatus, status(resp))
	}
	loc := ""
	if resp.StatusCode == 200 {
		var doc struct {
			Location string `json:"location"`
		}
		body, err := readLimited(resp, MaxAPIDocumentSize)
		if err != nil {
			return "", fmt.Errorf("%s: GET %s: %w", what, u, err)
		}
		if apiJSON.Unmarshal(body, &doc) == nil {
			loc = doc.Location
		}
	}
	if loc == "" {
		loc = resp.Header.Get("X-Terraform-Get")
	}
	if loc == "" {
		return "", fmt.Errorf("%s: the registry gave no location (no JSON location, no X-Terraform-Get)", what)
	}
	if err := checkText(what, "location", loc); err != nil {
		return "", err
	}
	if strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "./") || strings.HasPrefix(loc, "../") {
		ref, err := url.Parse(loc)
		if err != nil {
			return "", fmt.Errorf("%s: location %s: %w", what, quote(loc), err)
		}
		loc = resp.Request.URL.ResolveReference(ref).String()
	}
	if err := c.CheckProxied(host, what, loc); err != nil {
		return "", err
	}
	return loc, nil
}
