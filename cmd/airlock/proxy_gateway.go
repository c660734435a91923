package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/proxy"
)

// loadGatewayFile reads the clients of "airlock proxy --gateway FILE":
// a file held to the rules of a policy file (only the caller or root may
// have written it), parsed strictly, each client's task one the policy
// has an allowlist for.
func loadGatewayFile(path string, allowlists map[string][]string) ([]proxy.Client, error) {
	f, fi, err := hostfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("proxy: --gateway: %w", err)
	}
	defer f.Close()
	if _, err := policy.Trusted(path, fi); err != nil {
		return nil, fmt.Errorf("proxy: --gateway %s: %w", path, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, proxy.MaxGatewayFile+1))
	if err != nil {
		return nil, fmt.Errorf("proxy: --gateway %s: %w", path, err)
	}
	ext := strings.ToLower(filepath.Ext(path))
	clients, err := proxy.ParseGatewayFile(path, data, ext == ".yaml" || ext == ".yml")
	if err != nil {
		return nil, err
	}
	for _, c := range clients {
		if err := checkTask(allowlists, c.Task); err != nil {
			return nil, fmt.Errorf("proxy: --gateway %s: client %q: %w", path, c.Name, err)
		}
	}
	return clients, nil
}

// newProxyTokenCmd is "airlock proxy token": a new client token for a
// gateway.
func newProxyTokenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "token",
		Short: "Mint a token for one client of a shared gateway",
		Long: `token prints a new random token (256 bits) on its first line, and the
tokenSHA256 of the gateway file's client entry on its second. Give the
token to one sandbox only (its proxy URL's password, e.g. as a Secret);
keep only the hash in the gateway file. See docs/egress.md, "The shared
gateway".`,
		Args: noArgs("proxy token: unexpected argument %q"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			token, sum, err := proxy.MintToken()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n%s\n", token, sum)
			if err != nil {
				return fmt.Errorf("proxy token: writing the token: %w", err)
			}
			return nil
		},
	}
}
