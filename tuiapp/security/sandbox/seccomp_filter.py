"""The seccomp filter every sandboxed call runs under (_child_starter.py installs it): bwrap's
--disable-userns, for calls that a resident starter makes. A new user namespace would give a
call every capability again inside it; the filter refuses one:
  unshare() or clone() with CLONE_NEWUSER -> EPERM;
  clone3() -> ENOSYS (its flags are behind a pointer a filter cannot read; libc then falls back
  to clone(), which is checked);
  x32 system calls, and any architecture but the machine's own (and i386 on x86_64) -> EPERM.
Everything else is allowed: the other walls are namespaces and mounts, not system calls.
"""

from __future__ import annotations

import platform
import struct

CLONE_NEWUSER = 0x10000000
# Per machine: (audit arch, unshare, clone, clone3, whether x32 calls come this way).
ARCHES = {
    "x86_64": [(0xC000003E, 272, 56, 435, True), (0x40000003, 310, 120, 435, False)],
    "aarch64": [(0xC00000B7, 97, 220, 435, False)],
}
_LD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _ENOSYS = 1, 38
_X32_BIT = 0x40000000


def program(machine: str | None = None) -> bytes | None:
    """The filter as struct sock_filter[] bytes, or None where kep has none for this machine."""
    blocks = ARCHES.get(machine or platform.machine())
    if blocks is None:
        return None
    # (op, jump-if-true label, jump-if-false label, k); labels resolved below
    code: list[tuple[object, ...]] = [(_LD, 0, 0, 4)]  # seccomp_data.arch
    for i, (arch, unshare, clone, clone3, x32) in enumerate(blocks):
        code.append((_JEQ, 0, f"arch{i + 1}", arch))
        code.append((_LD, 0, 0, 0))  # seccomp_data.nr
        if x32:
            code.append((_JGE, "deny", 0, _X32_BIT))
        code += [(_JEQ, "nosys", 0, clone3), (_JEQ, "flags", 0, unshare),
                 (_JEQ, "flags", 0, clone), (_RET, 0, 0, _ALLOW), ("label", f"arch{i + 1}")]
    code += [(_RET, 0, 0, _ERRNO | _EPERM),
             ("label", "flags"), (_LD, 0, 0, 16),  # args[0], its low half (little-endian)
             (_JSET, "deny", 0, CLONE_NEWUSER), (_RET, 0, 0, _ALLOW),
             ("label", "deny"), (_RET, 0, 0, _ERRNO | _EPERM),
             ("label", "nosys"), (_RET, 0, 0, _ERRNO | _ENOSYS)]
    where: dict[object, int] = {}
    n = 0
    for ins in code:
        if ins[0] == "label":
            where[ins[1]] = n
        else:
            n += 1
    out, n = [], 0
    for ins in code:
        if ins[0] == "label":
            continue
        op, jt, jf, k = ins
        out.append(struct.pack("HBBI", op, where[jt] - n - 1 if jt else 0,
                               where[jf] - n - 1 if jf else 0, k))
        n += 1
    return b"".join(out)
