"""A seccomp deny-list, compiled by hand to classic BPF for `bwrap --seccomp FD`.

Namespaces and dropped capabilities already stop most of these calls; the filter is
the second wall, and it shrinks the kernel surface a sandboxed process can reach
(keyrings, bpf, io_uring, perf, module loading). No libseccomp binding is assumed,
so the program is written out here: check the architecture, refuse x32 numbers,
refuse each listed call with EPERM, make clone3 look absent (ENOSYS, so libc falls
back to clone) and refuse clone() only when asked for new namespaces.
"""

from __future__ import annotations

import errno
import platform
import struct

# BPF opcodes (linux/filter.h, linux/bpf_common.h) and seccomp return actions.
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_KILL_PROCESS, _RET_ERRNO, _RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
_X32_BIT = 0x40000000
_CLONE_NEW_NAMESPACES = 0x7E020000  # NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET

_X86_64_DENIED = {
    "ptrace": 101, "syslog": 103, "vhangup": 153, "pivot_root": 155,
    "chroot": 161, "acct": 163, "settimeofday": 164, "mount": 165, "umount2": 166,
    "swapon": 167, "swapoff": 168, "reboot": 169, "sethostname": 170, "setdomainname": 171,
    "iopl": 172, "ioperm": 173, "init_module": 175, "delete_module": 176, "quotactl": 179,
    "lookup_dcookie": 212, "kexec_load": 246, "add_key": 248, "request_key": 249,
    "keyctl": 250, "unshare": 272, "perf_event_open": 298, "name_to_handle_at": 303,
    "open_by_handle_at": 304, "setns": 308, "process_vm_readv": 310, "process_vm_writev": 311,
    "finit_module": 313, "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442,
}  # fmt: skip
_ARCHES = {"x86_64": (0xC000003E, _X86_64_DENIED, 56, 435)}  # audit arch, table, clone, clone3

DENIED_SYSCALLS = tuple(sorted(_X86_64_DENIED))


def supported() -> bool:
    """Whether a filter exists for this machine's architecture."""
    return platform.machine() in _ARCHES


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def deny_filter() -> bytes:
    """The compiled filter (an array of `struct sock_filter`) for this architecture."""
    audit_arch, denied, clone_nr, clone3_nr = _ARCHES[platform.machine()]
    checks = [(_JGE_K, _X32_BIT)] + [(_JEQ_K, nr) for nr in sorted(denied.values())]
    # Layout: [0-2] arch check, [3] load nr, checks, clone3, clone, load flags, jset, ALLOW, DENY, NOSYS
    n = len(checks)
    allow = 4 + n + 4
    deny, nosys = allow + 1, allow + 2
    prog = [
        _insn(_LD_W_ABS, 4),  # seccomp_data.arch
        _insn(_JEQ_K, audit_arch, jt=1),
        _insn(_RET_K, _RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0),  # seccomp_data.nr
    ]
    for i, (op, k) in enumerate(checks):
        prog.append(_insn(op, k, jt=deny - (4 + i) - 1))
    pc = 4 + n
    prog.append(_insn(_JEQ_K, clone3_nr, jt=nosys - pc - 1))
    prog.append(_insn(_JEQ_K, clone_nr, jf=allow - (pc + 1) - 1))
    prog.append(_insn(_LD_W_ABS, 16))  # low word of args[0]: the clone flags
    prog.append(_insn(_JSET_K, _CLONE_NEW_NAMESPACES, jt=deny - (pc + 3) - 1))
    prog.append(_insn(_RET_K, _RET_ALLOW))
    prog.append(_insn(_RET_K, _RET_ERRNO | errno.EPERM))
    prog.append(_insn(_RET_K, _RET_ERRNO | errno.ENOSYS))
    return b"".join(prog)
