package enforcer

import (
	"errors"
	"fmt"

	"github.com/airlock-sandbox/airlock/audit"
)

// sealRun ends a run's claim on the audit log once its last record is
// written: with a signing key, a checkpoint is signed and the run's
// records proven in it (Result.Audit). A checkpoint that cannot be signed
// (the log was cut or rewritten under the run, a full disk) is a record of
// the run that could not be written: AuditError, and ExitAudit when the
// command ran.
func sealRun(claim *audit.RunClaim, res Result, err error) (Result, error) {
	proof, perr := claim.End()
	if perr == nil {
		res.Audit = proof
		return res, err
	}
	if res.AuditError == "" {
		res.AuditError = "the run's checkpoint was not signed: " + perr.Error()
	}
	if res.ExitCode != ExitSetup && res.Refusal == nil && res.CommandExitCode == nil {
		code := res.ExitCode
		res.CommandExitCode, res.ExitCode = &code, ExitAudit
	}
	return res, errors.Join(err, fmt.Errorf("enforcer: %w: %w", ErrAudit, perr))
}
