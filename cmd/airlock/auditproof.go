package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// keyFileFlag adds --key-file to cmd, naming the signing key to use.
func keyFileFlag(cmd *cobra.Command, keyFile *string) {
	cmd.Flags().StringVar(keyFile, "key-file", "", "the signing key (default: $AIRLOCK_AUDIT_KEY, else airlock's private state)")
}

// openSigned opens the existing audit log that args name (auditFile)
// with the signing key: keyFile, else $AIRLOCK_AUDIT_KEY, else the default.
// A log that does not open is sub's failure (auditFailed).
func openSigned(sub string, args []string, keyFile string) (string, *audit.Log, error) {
	file, err := auditFile(args)
	if err != nil {
		return "", nil, err
	}
	if _, err := os.Stat(file); err != nil {
		return "", nil, auditFailed(sub, file, err)
	}
	s, err := audit.LoadSigner(cmp.Or(keyFile, os.Getenv("AIRLOCK_AUDIT_KEY")))
	if err != nil {
		return "", nil, auditFailed(sub, file, err)
	}
	l, err := audit.Open(file, audit.WithSigner(s))
	if err != nil {
		return "", nil, auditFailed(sub, file, err)
	}
	return file, l, nil
}

func newAuditCheckpointCmd() *cobra.Command {
	var out, keyFile string
	cmd := &cobra.Command{
		Use:   "checkpoint [--key-file FILE] [--out FILE] [FILE]",
		Short: "Sign a checkpoint of the audit log now and print it",
		Long: `checkpoint signs a checkpoint of the whole audit log (a C2SP tlog-checkpoint in a
signed note: the log's origin, its number of records and its Merkle tree root)
with airlock's signing key, and prints it. airlock never signs a checkpoint
that contradicts the last one it signed for the log: when records it covers
were removed or changed, checkpoint fails and signs nothing. airlock run and
airlock launch sign one at the end of every run; keep one somewhere the log's
writers cannot change, and check the log against it later with
"airlock audit verify --key PUBKEY --checkpoint FILE".`,
		Args: atMostOneFile("checkpoint"),
		RunE: func(cmd *cobra.Command, args []string) error {
			file, l, err := openSigned("checkpoint", args, keyFile)
			if err != nil {
				return err
			}
			defer l.Close()
			cp, err := l.Checkpoint()
			if err != nil {
				return auditFailed("checkpoint", file, err)
			}
			if out != "" {
				if err := hostfile.WriteFile(out, []byte(cp.Note), 0o644); err != nil {
					return auditFailed("checkpoint", file, err)
				}
				return nil
			}
			fmt.Fprint(cmd.OutOrStdout(), cp.Note)
			return nil
		},
	}
	keyFileFlag(cmd, &keyFile)
	cmd.Flags().StringVar(&out, "out", "", "write the checkpoint to this file instead of standard output")
	return cmd
}

func newAuditProveCmd() *cobra.Command {
	var run, keyFile string
	cmd := &cobra.Command{
		Use:   "prove --run ID [--key-file FILE] [FILE]",
		Short: "Prove a run's records in a checkpoint signed now: one JSON object",
		Long: `prove signs a checkpoint of the audit log (see "airlock audit checkpoint") and
prints, as one JSON object, the checkpoint and the inclusion proof of each
record of the run ID (at most 64: the first and the last 32): what a run's
--result carries in "audit". Check it offline with "airlock audit
verify-proof", or with golang.org/x/mod/sumdb/note and tlog alone
(docs/audit.md, "Proofs").`,
		Args: atMostOneFile("prove"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if run == "" {
				return usageError{errors.New("audit prove: --run is required")}
			}
			file, l, err := openSigned("prove", args, keyFile)
			if err != nil {
				return err
			}
			defer l.Close()
			cp, err := l.Checkpoint()
			if err != nil {
				return auditFailed("prove", file, err)
			}
			recs, omitted, err := l.ProveRun(cp, run)
			if err != nil {
				return auditFailed("prove", file, err)
			}
			return termtext.WriteJSON(cmd.OutOrStdout(), audit.RunProof{Checkpoint: cp.Note, PublicKey: l.Signer().PublicKey(),
				Records: recs, Omitted: omitted}, "  ")
		},
	}
	keyFileFlag(cmd, &keyFile)
	cmd.Flags().StringVar(&run, "run", "", "the run (or session) id whose records to prove")
	return cmd
}

// maxProofFile bounds a proof or result file read by verify-proof.
const maxProofFile = 16 << 20

func newAuditVerifyProofCmd() *cobra.Command {
	var key string
	var utc bool
	cmd := &cobra.Command{
		Use:   "verify-proof --key PUBKEY PROOF",
		Short: "Check a run's proof offline: the checkpoint's signature and each record's inclusion",
		Long: `verify-proof checks PROOF, the JSON that "airlock audit prove" prints or a run's
--result (its "audit" member), with the public key alone: the checkpoint must
be signed by --key, and every record must be an intact audit line included in
the checkpoint's tree at its index. It needs neither the log nor airlock's
state. Exit 0 and the records, or exit 1 and why.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{errors.New("audit verify-proof: give one PROOF file")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if key == "" {
				return usageError{errors.New("audit verify-proof: --key is required: the public key that signs checkpoints")}
			}
			vkey, err := publicKey(key)
			if err != nil {
				return err
			}
			p, err := readProof(args[0])
			if err != nil {
				return auditFailed("verify-proof", args[0], err)
			}
			cp, evs, err := audit.VerifyRunProof(p, vkey)
			if err != nil {
				return auditFailed("verify-proof", args[0], err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s: ok: %d %s proven in the checkpoint of %s at size %d", args[0], len(evs),
				plural(len(evs), "record"), cp.Origin, cp.Size)
			if p.Omitted > 0 {
				fmt.Fprintf(w, " (%d more not in the proof)", p.Omitted)
			}
			fmt.Fprintln(w)
			for _, ev := range evs {
				fmt.Fprintf(w, "  seq %d %s\n", ev.Seq, audit.FormatEvent(ev, location(utc)))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "the public key that signs checkpoints (NAME+HASH+KEY, or a file holding it)")
	cmd.Flags().BoolVar(&utc, "utc", false, "show times in UTC instead of local time")
	return cmd
}

// readProof reads a RunProof, alone or as a run result's "audit" member.
func readProof(path string) (audit.RunProof, error) {
	b, err := hostfile.ReadFile(path, maxProofFile) // a FIFO is refused, not waited on
	if err != nil {
		return audit.RunProof{}, err
	}
	if len(b) > maxProofFile {
		return audit.RunProof{}, errors.New("the file is larger than any proof")
	}
	var wrapped struct {
		Audit *audit.RunProof `json:"audit"`
	}
	if err := json.Unmarshal(b, &wrapped); err == nil && wrapped.Audit != nil {
		return *wrapped.Audit, nil
	}
	var p audit.RunProof
	if err := json.Unmarshal(b, &p); err != nil || p.Checkpoint == "" {
		return audit.RunProof{}, errors.New("neither a proof nor a run result with one (no checkpoint)")
	}
	return p, nil
}

func newAuditPubkeyCmd() *cobra.Command {
	var keyFile string
	cmd := &cobra.Command{
		Use:   "pubkey [--key-file FILE]",
		Short: "Print the public key that verifies this airlock's checkpoints",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := audit.LoadSigner(cmp.Or(keyFile, os.Getenv("AIRLOCK_AUDIT_KEY")))
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), s.PublicKey())
			return nil
		},
	}
	keyFileFlag(cmd, &keyFile)
	return cmd
}
