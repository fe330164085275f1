package gcsstore

import (
	"encoding/json"
	"fmt"
	"os"

	"google.golang.org/api/option"
)

// credentialsFileOption returns the client option that authenticates with
// the Google credentials JSON file at path, of the type its "type" field
// names (service_account, authorized_user, external_account,
// impersonated_service_account). A file that cannot be read, is no JSON
// object or has another type is an error naming the file (never its
// content).
func credentialsFileOption(path string) (option.ClientOption, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credentials file: %w", err)
	}
	var f struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("credentials file %s: not a Google credentials JSON file", path)
	}
	types := map[string]option.CredentialsType{
		"service_account":              option.ServiceAccount,
		"authorized_user":              option.AuthorizedUser,
		"external_account":             option.ExternalAccount,
		"impersonated_service_account": option.ImpersonatedServiceAccount,
	}
	t, ok := types[f.Type]
	if !ok {
		return nil, fmt.Errorf("credentials file %s: type %q is none of service_account, authorized_user, external_account, impersonated_service_account", path, f.Type)
	}
	return option.WithAuthCredentialsFile(t, path), nil
}
