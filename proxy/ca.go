package proxy

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// CA is the certificate authority of one session's inspected tunnels,
// made in memory: its key is generated here and never leaves the process
// (it is not encoded anywhere), and only its certificate is handed out,
// for the sandbox to trust. It mints a certificate per host on first
// use, all with one key of their own (docs/egress.md, "Inspection").
type CA struct {
	cert     *x509.Certificate
	certPEM  []byte
	key      *ecdsa.PrivateKey
	leafKey  *ecdsa.PrivateKey
	notAfter time.Time

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// maxLeaves bounds the certificates a CA keeps; past it the cache is
// emptied (a wildcard entry may name any number of hosts).
const maxLeaves = 1024

// NewCA makes a CA named name (its certificate's common name), valid
// from an hour ago (clock skew) for life.
func NewCA(name string, life time.Duration) (*CA, error) {
	if life <= 0 {
		return nil, errors.New("proxy: a CA needs a positive life")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("proxy: CA key: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("proxy: CA leaf key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{ // no SerialNumber: CreateCertificate draws a random one
		Subject:               pkix.Name{CommonName: name, Organization: []string{"airlock"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(life),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("proxy: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("proxy: CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key, leafKey: leafKey, notAfter: tmpl.NotAfter, leaves: map[string]*tls.Certificate{},
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// CertPEM returns the CA's certificate in PEM: what the sandbox trusts.
func (ca *CA) CertPEM() []byte { return bytes.Clone(ca.certPEM) }

// Certificate returns the CA's certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// Bundle returns system, a PEM bundle of trusted roots, followed by the
// CA's certificate: the bundle a sandbox with inspected entries trusts.
func (ca *CA) Bundle(system []byte) []byte {
	out := bytes.Clone(system)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, "# airlock session CA: inspected egress (docs/egress.md)\n"...)
	return append(out, ca.certPEM...)
}

// leaf returns the certificate for host, a normalised name or an IP
// address, minting it on first use.
func (ca *CA) leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c := ca.leaves[host]; c != nil {
		return c, nil
	}
	tmpl := &x509.Certificate{ // a random serial, as the CA's
		Subject:     pkix.Name{CommonName: host},
		NotBefore:   time.Now().Add(-time.Hour),
		NotAfter:    ca.notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if a, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, a.AsSlice())
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, ca.leafKey.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("certificate for %s: %w", host, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: ca.leafKey}
	if len(ca.leaves) >= maxLeaves {
		clear(ca.leaves)
	}
	ca.leaves[host] = c
	return c, nil
}
