#include "textflag.h"

// func int80(trap uintptr) int64
// An i386 system call from 64-bit code: the kernel takes it through the
// compat entry, with AUDIT_ARCH_I386 in the seccomp data.
TEXT ·int80(SB),NOSPLIT,$0-16
	MOVQ trap+0(FP), AX
	XORQ BX, BX
	XORQ CX, CX
	XORQ DX, DX
	INT $0x80
	MOVQ AX, ret+8(FP)
	RET
