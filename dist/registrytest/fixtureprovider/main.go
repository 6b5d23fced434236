// Command provider is a minimal real Terraform provider (plugin protocol 5)
// with an empty schema. The end-to-end test packs it into the stand-in
// registry's linux_amd64 zips so that 'terraform validate' can start it
// offline: proof that the installed bytes are a runnable plugin.
package main

import (
	"context"

	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tfprotov5/tf5server"
)

// provider answers the calls 'terraform validate' makes; the embedded
// interface is nil, so any other call would fail loudly.
type provider struct{ tfprotov5.ProviderServer }

func (provider) GetMetadata(context.Context, *tfprotov5.GetMetadataRequest) (*tfprotov5.GetMetadataResponse, error) {
	return &tfprotov5.GetMetadataResponse{ServerCapabilities: &tfprotov5.ServerCapabilities{}}, nil
}

func (provider) GetProviderSchema(context.Context, *tfprotov5.GetProviderSchemaRequest) (*tfprotov5.GetProviderSchemaResponse, error) {
	return &tfprotov5.GetProviderSchemaResponse{
		Provider:                 &tfprotov5.Schema{Block: &tfprotov5.SchemaBlock{}},
		ResourceSchemas:          map[string]*tfprotov5.Schema{},
		DataSourceSchemas:        map[string]*tfprotov5.Schema{},
		EphemeralResourceSchemas: map[string]*tfprotov5.Schema{},
		Functions:                map[string]*tfprotov5.Function{},
		ServerCapabilities:       &tfprotov5.ServerCapabilities{},
	}, nil
}

func (provider) GetResourceIdentitySchemas(context.Context, *tfprotov5.GetResourceIdentitySchemasRequest) (*tfprotov5.GetResourceIdentitySchemasResponse, error) {
	return &tfprotov5.GetResourceIdentitySchemasResponse{}, nil
}

func (provider) GetFunctions(context.Context, *tfprotov5.GetFunctionsRequest) (*tfprotov5.GetFunctionsResponse, error) {
	return &tfprotov5.GetFunctionsResponse{Functions: map[string]*tfprotov5.Function{}}, nil
}

func (provider) PrepareProviderConfig(_ context.Context, req *tfprotov5.PrepareProviderConfigRequest) (*tfprotov5.PrepareProviderConfigResponse, error) {
	return &tfprotov5.PrepareProviderConfigResponse{PreparedConfig: req.Config}, nil
}

func (provider) ConfigureProvider(context.Context, *tfprotov5.ConfigureProviderRequest) (*tfprotov5.ConfigureProviderResponse, error) {
	return &tfprotov5.ConfigureProviderResponse{}, nil
}

func (provider) StopProvider(context.Context, *tfprotov5.StopProviderRequest) (*tfprotov5.StopProviderResponse, error) {
	return &tfprotov5.StopProviderResponse{}, nil
}

func main() {
	tf5server.Serve("registry.terraform.io/example/fixture", func() tfprotov5.ProviderServer { return provider{} })
}
